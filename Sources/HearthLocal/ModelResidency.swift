import Foundation

/// Which of several local models stay loaded, for a server that serves more than one
/// (`hearth serve --model A --model B --max-loaded N`), as Ollama keeps models resident: each
/// model loads on first use, and when a model is about to be used while `maxLoaded` others
/// are loaded, the least recently used of them is unloaded. A request already running on an
/// unloaded model keeps its weights until it finishes (the generator lives while it is used);
/// the memory is returned then.
///
/// `@unchecked Sendable`: `order` and `providers` are only touched under `lock`.
public final class ModelResidency: @unchecked Sendable {
    /// Models loaded at once, at least 1.
    public let maxLoaded: Int
    private let lock = NSLock()
    /// Providers by identity, least recently used first.
    private var order: [ObjectIdentifier] = []
    private var providers: [ObjectIdentifier: Weak] = [:]
    private var unloadCount = 0

    private struct Weak { weak var provider: LocalProvider? }

    public init(maxLoaded: Int) { self.maxLoaded = max(1, maxLoaded) }

    /// Models unloaded to make room so far.
    public var unloads: Int { lock.withLock { unloadCount } }

    /// `provider` is about to be used: it becomes the most recently used, and loaded models
    /// beyond `maxLoaded − 1` others are unloaded, least recently used first.
    func willUse(_ provider: LocalProvider) {
        let victims: [LocalProvider] = lock.withLock {
            let id = ObjectIdentifier(provider)
            order.removeAll { $0 == id }
            order.append(id)
            providers[id] = Weak(provider: provider)
            let others = order.dropLast().compactMap { providers[$0]?.provider }.filter(\.isResident)
            let excess = others.count - (maxLoaded - 1)
            return excess > 0 ? Array(others.prefix(excess)) : []
        }
        for victim in victims where victim.unload() {
            lock.withLock { unloadCount += 1 }
        }
    }
}

extension LocalProvider {
    /// Whether the model is loaded or loading.
    public var isResident: Bool {
        lock.withLock {
            switch state {
            case .loaded, .loading: return true
            case .idle, .failed: return false
            }
        }
    }

    /// Drops the loaded model so its memory can be returned; the next use loads it again.
    /// Requests already running keep it until they finish. Returns whether it was loaded.
    @discardableResult
    public func unload() -> Bool {
        lock.withLock {
            guard case .loaded = state else { return false }
            state = .idle
            return true
        }
    }
}
