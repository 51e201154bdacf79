/// Whether a provider can serve a request right now.
public enum ProviderAvailability: Sendable, Equatable {
    /// Ready to serve.
    case available
    /// Cannot serve, for the given reason.
    case unavailable(UnavailableReason)
}

/// Why a provider cannot serve.
public enum UnavailableReason: Sendable, Equatable {
    /// The local model's files are not on this device.
    case notDownloaded
    /// The local model is being loaded.
    case loading
    /// The device has too little free memory for the model.
    case insufficientMemory
    /// There is no network connection.
    case offline
    /// No credentials are configured, or they were rejected.
    case unauthorized
    /// Anything else, described for a person.
    case other(String)
}

extension UnavailableReason: CustomStringConvertible {
    /// A short phrase for a person, such as `model not downloaded`.
    public var description: String {
        switch self {
        case .notDownloaded: return "model not downloaded"
        case .loading: return "model loading"
        case .insufficientMemory: return "not enough memory"
        case .offline: return "offline"
        case .unauthorized: return "no valid credentials"
        case .other(let text): return text
        }
    }
}
