import Crypto
import Foundation

/// The time the gateway reads (limits, day boundaries, signature windows, token expiry, cache
/// TTL). Tests pass a clock they move by hand, so a minute or a day passes without waiting.
public struct GatewayClock: Sendable {
    /// The current time.
    public let now: @Sendable () -> Date

    /// A clock reading `now`.
    public init(_ now: @escaping @Sendable () -> Date) { self.now = now }

    /// The system's wall clock.
    public static let system = GatewayClock { Date() }
}

/// Who made a request, once authenticated.
struct Caller: Sendable {
    let client: GatewayConfiguration.Client
    /// The bearer was a token from `POST /v1/auth/token` (tokens cannot mint tokens).
    let viaToken: Bool
}

/// Checks API keys, tokens and HMAC request signatures (docs/SERVER.md#authentication).
///
/// - A key is looked up by its SHA-256, compared in constant time with every client's.
/// - A client with an HMAC secret must also send `x-timestamp` (Unix seconds, within the
///   window of the server's clock) and `x-signature`: hex HMAC-SHA256 over
///   `METHOD\nPATH\nTIMESTAMP\nhex(SHA256(body))` (PATH as sent, with its query string) with its secret (or, when it authenticated
///   with a token, with the token). A signature already accepted inside the window is refused.
/// - Tokens are `hst_<payload>.<mac>`: the client's name and expiry, MACed with the server's
///   token key, so they need no storage and expire by themselves.
final class GatewayAuthenticator: @unchecked Sendable {
    // `@unchecked Sendable`: `seen` is only touched under `lock`; everything else is immutable.
    let clients: [GatewayConfiguration.Client]
    let clock: GatewayClock
    let window: Int
    let tokenTTL: Int
    private let tokenKey: SymmetricKey
    private let lock = NSLock()
    private var seen: [String: Date] = [:]
    private var nextSweep = Date.distantPast
    static let tokenPrefix = "hst_"

    init(configuration: GatewayConfiguration, clock: GatewayClock) {
        clients = configuration.clients
        self.clock = clock
        window = configuration.signatureWindowSeconds
        tokenTTL = configuration.tokenTTLSeconds
        tokenKey = configuration.tokenSecret?.key ?? SymmetricKey(size: .bits256)
    }

    static func unauthorized(_ message: String, code: String = "invalid_api_key") -> APIError {
        APIError(status: 401, message: message, type: "authentication_error", code: code)
    }

    /// The bearer (`Authorization: Bearer …`) or `x-api-key` value.
    static func presentedKey(_ header: (String) -> String?) -> String? {
        if let value = header("authorization"), value.lowercased().hasPrefix("bearer ") {
            let key = value.dropFirst(7).trimmingCharacters(in: .whitespaces)
            if !key.isEmpty { return key }
        }
        if let value = header("x-api-key"), !value.isEmpty { return value }
        return nil
    }

    /// Who a request's headers say it is, before its body has been read.
    struct Identity: Sendable {
        let caller: Caller
        /// The keys a signature may be made with; empty when the client does not sign.
        let signingKeys: [SymmetricKey]
        /// Whether the body must be read to check the signature.
        var signs: Bool { !signingKeys.isEmpty }
    }

    /// The caller every request is when the server has no key (`hearth serve` without `--api-key`).
    static let anonymous = Caller(client: GatewayConfiguration.Client(name: "-", keyDigest: []), viaToken: false)

    /// Identifies a request from its headers alone (key or token): nothing of the body is read
    /// for a caller the server does not know. With no clients configured every request is
    /// ``anonymous``.
    /// - Throws: ``APIError`` 401 (never quoting what was presented).
    func identify(header: (String) -> String?) throws -> Identity {
        if clients.isEmpty { return Identity(caller: Self.anonymous, signingKeys: []) }
        guard let presented = Self.presentedKey(header) else {
            throw Self.unauthorized("Missing API key: send Authorization: Bearer <key> (or x-api-key).")
        }
        let caller: Caller
        var signingKeys: [SymmetricKey] = []
        if presented.hasPrefix(Self.tokenPrefix) {
            caller = try verifyToken(presented)
            signingKeys.append(SymmetricKey(data: Array(presented.utf8)))
        } else {
            guard let client = client(forKey: presented) else { throw Self.unauthorized("Invalid API key.") }
            caller = Caller(client: client, viaToken: false)
        }
        guard let secret = caller.client.hmacSecret else { return Identity(caller: caller, signingKeys: []) }
        signingKeys.append(secret.key)
        return Identity(caller: caller, signingKeys: signingKeys)
    }

    /// Checks the signature of an identified request once its body has been read (nothing to
    /// check for a client without an HMAC secret).
    /// - Throws: ``APIError`` 401.
    func verify(_ identity: Identity, method: String, path: String, header: (String) -> String?, body: Data) throws {
        guard identity.signs else { return }
        try verifySignature(method: method, path: path, header: header, body: body, keys: identity.signingKeys)
    }

    /// Authenticates a request whose body is at hand: ``identify(header:)`` then ``verify(_:method:path:header:body:)``.
    /// - Throws: ``APIError`` 401 (never quoting what was presented).
    func authenticate(method: String, path: String, header: (String) -> String?, body: Data) throws -> Caller {
        let identity = try identify(header: header)
        try verify(identity, method: method, path: path, header: header, body: body)
        return identity.caller
    }

    /// The client whose key hashes to the presented key's SHA-256 (every client compared, in constant time).
    func client(forKey key: String) -> GatewayConfiguration.Client? {
        let digest = Array(SHA256.hash(data: Array(key.utf8)))
        var found: GatewayConfiguration.Client?
        for client in clients where constantTimeEqual(client.keyDigest, digest) {
            found = client
        }
        return found
    }

    func verifySignature(method: String, path: String, header: (String) -> String?, body: Data, keys: [SymmetricKey]) throws {
        guard let timestampText = header("x-timestamp"), let signatureText = header("x-signature") else {
            throw Self.unauthorized(
                "This client must sign its requests: send x-timestamp (Unix seconds) and x-signature "
                    + "(hex HMAC-SHA256 of METHOD\\nPATH\\nTIMESTAMP\\nhex(SHA256(body))).", code: "signature_missing")
        }
        guard let timestamp = Int(timestampText), timestampText.count <= 12 else {
            throw Self.unauthorized("x-timestamp must be Unix time in whole seconds.", code: "signature_invalid")
        }
        let now = clock.now()
        let skew = Int(now.timeIntervalSince1970) - timestamp
        guard abs(skew) <= window else {
            throw Self.unauthorized(
                "The request's x-timestamp is \(abs(skew)) seconds \(skew > 0 ? "old" : "in the future"); it must be within "
                    + "\(window) seconds of the server's clock. Check the device's clock.", code: "signature_expired")
        }
        guard let presented = Hex.decode(signatureText.lowercased()), presented.count == 32 else {
            throw Self.unauthorized("x-signature must be 64 hexadecimal characters.", code: "signature_invalid")
        }
        let canonical = Self.canonical(method: method, path: path, timestamp: timestampText, body: body)
        var valid = false
        for key in keys {
            let expected = Array(HMAC<SHA256>.authenticationCode(for: Array(canonical.utf8), using: key))
            if constantTimeEqual(expected, presented) { valid = true }
        }
        guard valid else {
            throw Self.unauthorized(
                "The signature does not match the request (method, path, timestamp and body must be signed as sent).",
                code: "signature_invalid")
        }
        // Refuse a signature seen inside the window: a captured request cannot be replayed.
        let fresh: Bool = lock.withLock {
            if now >= nextSweep {
                seen = seen.filter { $0.value > now }
                nextSweep = now.addingTimeInterval(Double(window))
            }
            let id = Hex.encode(presented)
            if let until = seen[id], until > now { return false }
            seen[id] = Date(timeIntervalSince1970: Double(timestamp + window + 1))
            return true
        }
        guard fresh else {
            throw Self.unauthorized("This signed request was already received; sign every request anew.", code: "signature_replayed")
        }
    }

    /// `METHOD\nPATH\nTIMESTAMP\nhex(SHA256(body))`, the text a client signs.
    static func canonical(method: String, path: String, timestamp: String, body: Data) -> String {
        "\(method.uppercased())\n\(path)\n\(timestamp)\n\(Hex.encode(SHA256.hash(data: body)))"
    }

    // MARK: Tokens

    /// A token for `client` valid for `seconds` (at most the configured lifetime).
    func issueToken(for client: GatewayConfiguration.Client, seconds: Int?) -> (token: String, expiresAt: Int, expiresIn: Int) {
        let lifetime = min(max(1, seconds ?? tokenTTL), tokenTTL)
        let expiresAt = Int(clock.now().timeIntervalSince1970) + lifetime
        var nonce = [UInt8](repeating: 0, count: 12)
        for index in nonce.indices { nonce[index] = UInt8.random(in: 0...255) }
        // "k": which key the token was issued for (a prefix of its SHA-256): a token dies when its key is rotated.
        let payload: JSONValue = [
            "c": .string(client.name), "e": .int(expiresAt), "n": .string(Hex.encode(nonce)),
            "k": .string(Hex.encode(client.keyDigest.prefix(8))),
        ]
        let encoded = Self.base64URL(payload.serialized())
        let mac = Hex.encode(HMAC<SHA256>.authenticationCode(for: Array(encoded.utf8), using: tokenKey))
        return (Self.tokenPrefix + encoded + "." + mac, expiresAt, lifetime)
    }

    func verifyToken(_ token: String) throws -> Caller {
        let body = token.dropFirst(Self.tokenPrefix.count)
        let parts = body.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let mac = Hex.decode(String(parts[1])) else { throw Self.unauthorized("Invalid token.") }
        let expected = Array(HMAC<SHA256>.authenticationCode(for: Array(parts[0].utf8), using: tokenKey))
        guard constantTimeEqual(expected, mac), let data = Self.fromBase64URL(String(parts[0])),
            let payload = try? JSONValue.parse(utf8: Array(data)),
            case .string(let name)? = payload["c"], let expiry = payload["e"]?.doubleValue
        else { throw Self.unauthorized("Invalid token.") }
        guard clock.now().timeIntervalSince1970 < expiry else {
            throw Self.unauthorized("The token has expired; get a new one from POST /v1/auth/token.", code: "token_expired")
        }
        guard let client = clients.first(where: { $0.name == name }), case .string(let key)? = payload["k"],
            constantTimeEqual(Array(key.utf8), Array(Hex.encode(client.keyDigest.prefix(8)).utf8))
        else { throw Self.unauthorized("Invalid token (or its client's key has been rotated since it was issued).") }
        return Caller(client: client, viaToken: true)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func fromBase64URL(_ text: String) -> Data? {
        var base = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base.count % 4 != 0 { base += "=" }
        return Data(base64Encoded: base)
    }
}

/// Equal-length byte strings compared without an early exit (the time does not tell how many
/// leading bytes matched).
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    var difference: UInt8 = 0
    for index in a.indices { difference |= a[index] ^ b[index] }
    return difference == 0
}
