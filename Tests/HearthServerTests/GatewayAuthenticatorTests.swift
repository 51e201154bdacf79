import Crypto
import Foundation
import Testing

@testable import HearthServer

/// The gateway's authenticator on its own, with a clock moved by hand: keys, HMAC request
/// signatures (window, replay), tokens (expiry, tampering, key rotation, the signing key), and
/// error messages that never quote a secret. Signatures are made by the test's own HMAC
/// (`signature(secret:…)`, as a client app computes it), not by the authenticator.
@Suite struct GatewayAuthenticatorTests {
    static let appKey = "hk-app-key-0123456789abcdef"
    static let signerKey = "hk-signer-key-fedcba9876543210"
    static let hmacSecret = "an-hmac-secret-the-app-and-server-share"
    static let tokenSecret = "a-token-signing-secret-of-at-least-32-bytes"

    static func digest(_ key: String) -> [UInt8] { Array(SHA256.hash(data: Array(key.utf8))) }

    static func clients(appDigest: [UInt8] = digest(appKey)) -> [GatewayConfiguration.Client] {
        [
            GatewayConfiguration.Client(name: "app", keyDigest: appDigest),
            GatewayConfiguration.Client(name: "signer", keyDigest: digest(signerKey), hmacSecret: GatewaySecret(hmacSecret)),
        ]
    }

    static func authenticator(
        _ clock: ManualClock, clients: [GatewayConfiguration.Client] = clients(), window: Int = 300, tokenTTL: Int = 900,
        tokenSecret: String? = tokenSecret
    ) -> GatewayAuthenticator {
        let configuration = GatewayConfiguration(
            clients: clients, routes: [:], tokenTTLSeconds: tokenTTL, signatureWindowSeconds: window,
            tokenSecret: tokenSecret.map(GatewaySecret.init))
        return GatewayAuthenticator(configuration: configuration, clock: clock.clock)
    }

    static func headers(_ pairs: [(String, String)]) -> (String) -> String? {
        { name in pairs.first { $0.0 == name }?.1 }
    }

    /// The 401 a call throws (nil when it succeeds).
    static func refusal(_ body: () throws -> Void) -> APIError? {
        do {
            try body()
            return nil
        } catch let error as APIError {
            #expect(error.status == 401 && error.type == "authentication_error")
            return error
        } catch {
            Issue.record("not an APIError: \(error)")
            return nil
        }
    }

    /// Secrets that must never appear in an error message.
    static let secrets = [appKey, signerKey, hmacSecret, tokenSecret]

    @Test func keysAreAcceptedAndRejected() throws {
        let auth = Self.authenticator(ManualClock())
        let caller = try auth.authenticate(method: "GET", path: "/v1/models", header: Self.headers([("authorization", "Bearer \(Self.appKey)")]), body: Data())
        #expect(caller.client.name == "app" && !caller.viaToken)
        #expect(try auth.authenticate(method: "GET", path: "/", header: Self.headers([("x-api-key", Self.appKey)]), body: Data()).client.name == "app")
        #expect(GatewayAuthenticator.presentedKey(Self.headers([("authorization", "bearer  \(Self.appKey) ")])) == Self.appKey)
        #expect(GatewayAuthenticator.presentedKey(Self.headers([("authorization", "Bearer "), ("x-api-key", "k")])) == "k")
        #expect(GatewayAuthenticator.presentedKey(Self.headers([("authorization", "Basic abc")])) == nil)

        let missing = try #require(Self.refusal { _ = try auth.identify(header: Self.headers([])) })
        #expect(missing.message.contains("Missing API key"))
        let wrongKey = Self.appKey + "x"
        let wrong = try #require(Self.refusal { _ = try auth.identify(header: Self.headers([("authorization", "Bearer \(wrongKey)")])) })
        #expect(wrong.code == "invalid_api_key" && !wrong.message.contains(wrongKey))
        #expect(auth.client(forKey: Self.signerKey)?.name == "signer" && auth.client(forKey: "") == nil)

        // Without clients every request is the anonymous caller.
        let open = Self.authenticator(ManualClock(), clients: [])
        #expect(try open.identify(header: Self.headers([])).caller.client.name == "-")
    }

    @Test func constantTimeEqualCompares() {
        #expect(constantTimeEqual([1, 2, 3], [1, 2, 3]) && constantTimeEqual([], []))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2, 4]) && !constantTimeEqual([9, 2, 3], [1, 2, 3]))
        #expect(!constantTimeEqual([1, 2, 3], [1, 2]) && !constantTimeEqual([1, 2], [1, 2, 3]))
    }

    /// A signing client: a signature over method, path, timestamp and body inside the window
    /// is accepted once; any change to what was signed, an old or future timestamp, a replay,
    /// a malformed or missing signature is refused with its code.
    @Test func signaturesAreCheckedOnceInsideTheWindow() throws {
        let clock = ManualClock(RateLimiterTests.noon)
        let auth = Self.authenticator(clock, window: 300)
        let key = ("authorization", "Bearer \(Self.signerKey)")
        let body = #"{"model":"local"}"#
        func attempt(_ signed: [(String, String)], method: String = "POST", path: String = "/v1/chat/completions?x=1", body sent: String = body) throws {
            let header = Self.headers([key] + signed)
            let identity = try auth.identify(header: header)
            #expect(identity.signs)
            try auth.verify(identity, method: method, path: path, header: header, body: Data(sent.utf8))
        }
        func sign(at timestamp: Int, path: String = "/v1/chat/completions?x=1") -> [(String, String)] {
            signature(secret: Self.hmacSecret, method: "POST", path: path, timestamp: timestamp, body: body)
        }
        var errors: [APIError] = []
        func refused(_ code: String, _ body: () throws -> Void) {
            let error = Self.refusal(body)
            #expect(error?.code == code, "\(error?.message ?? "accepted")")
            if let error { errors.append(error) }
        }

        try attempt(sign(at: clock.unix))
        refused("signature_replayed") { try attempt(sign(at: clock.unix)) }
        refused("signature_invalid") { try attempt(sign(at: clock.unix - 1), body: body + " ") }
        refused("signature_invalid") { try attempt(sign(at: clock.unix - 2), path: "/v1/chat/completions?x=2") }
        refused("signature_invalid") { try attempt(sign(at: clock.unix - 3), method: "PUT") }
        refused("signature_invalid") { try attempt([("x-timestamp", String(clock.unix)), ("x-signature", "zz")]) }
        refused("signature_invalid") { try attempt([("x-timestamp", "soon"), ("x-signature", String(repeating: "0", count: 64))]) }
        refused("signature_missing") { try attempt([]) }
        // The window: 300 s either way is inside, 301 s is not.
        try attempt(sign(at: clock.unix - 300))
        try attempt(sign(at: clock.unix + 300))
        refused("signature_expired") { try attempt(sign(at: clock.unix - 301)) }
        refused("signature_expired") { try attempt(sign(at: clock.unix + 301)) }
        // Upper-case hex is the same signature.
        var upper = sign(at: clock.unix - 10)
        upper[1].1 = upper[1].1.uppercased()
        try attempt(upper)
        // A client without a secret does not sign: nothing of the body is checked.
        let plain = try auth.identify(header: Self.headers([("authorization", "Bearer \(Self.appKey)")]))
        #expect(!plain.signs)
        for error in errors {
            for secret in Self.secrets { #expect(!error.message.contains(secret)) }
        }
    }

    /// A replayed signature is refused for as long as its timestamp is inside the window, also
    /// after the sweep of old entries runs.
    @Test func replaysStayRefusedUntilTheTimestampExpires() throws {
        let clock = ManualClock(RateLimiterTests.noon)
        let auth = Self.authenticator(clock, window: 60)
        let timestamp = clock.unix
        let header = Self.headers(
            [("authorization", "Bearer \(Self.signerKey)")] + signature(secret: Self.hmacSecret, method: "GET", path: "/v1/models", timestamp: timestamp, body: ""))
        func once() throws {
            try auth.verify(try auth.identify(header: header), method: "GET", path: "/v1/models", header: header, body: Data())
        }
        try once()
        clock.advance(60)
        // Another request, at the edge of the window, runs the sweep of old entries; the first
        // signature is still remembered.
        let other = Self.headers(
            [("authorization", "Bearer \(Self.signerKey)")] + signature(secret: Self.hmacSecret, method: "GET", path: "/v1/models", timestamp: clock.unix, body: ""))
        try auth.verify(try auth.identify(header: other), method: "GET", path: "/v1/models", header: other, body: Data())
        #expect(Self.refusal { try once() }?.code == "signature_replayed")
        clock.advance(1)
        #expect(Self.refusal { try once() }?.code == "signature_expired")
    }

    /// Tokens: issued for a client, valid until their expiry, capped at the configured lifetime;
    /// a tampered token, one made with another key, or one for a rotated key is refused.
    @Test func tokensExpireAndCannotBeForged() throws {
        let clock = ManualClock(RateLimiterTests.noon)
        let auth = Self.authenticator(clock, tokenTTL: 900)
        let app = try #require(auth.client(forKey: Self.appKey))
        let issued = auth.issueToken(for: app, seconds: 60)
        #expect(issued.expiresIn == 60 && issued.expiresAt == clock.unix + 60 && issued.token.hasPrefix("hst_"))
        #expect(auth.issueToken(for: app, seconds: 100_000).expiresIn == 900)
        #expect(auth.issueToken(for: app, seconds: 0).expiresIn == 1)
        #expect(auth.issueToken(for: app, seconds: nil).expiresIn == 900)

        let bearer = Self.headers([("authorization", "Bearer \(issued.token)")])
        let caller = try auth.identify(header: bearer).caller
        #expect(caller.client.name == "app" && caller.viaToken)

        // Another process with the same token secret accepts it; one with another does not.
        #expect(try Self.authenticator(clock).identify(header: bearer).caller.client.name == "app")
        #expect(Self.refusal { _ = try Self.authenticator(clock, tokenSecret: "another-secret-of-at-least-32-bytes!!").identify(header: bearer) } != nil)
        // The client's key rotated since: refused.
        #expect(Self.refusal { _ = try Self.authenticator(clock, clients: Self.clients(appDigest: Self.digest("new-key"))).identify(header: bearer) } != nil)

        // Tampering: the payload (another client's name, a later expiry) or the MAC.
        let parts = issued.token.dropFirst(4).split(separator: ".")
        let payload = try #require(GatewayAuthenticator.fromBase64URL(String(parts[0])))
        let forged = String(decoding: payload, as: UTF8.self).replacingOccurrences(of: "\"app\"", with: "\"signer\"")
        #expect(forged != String(decoding: payload, as: UTF8.self), "the payload names its client as \"c\":\"app\"")
        let forgedToken = "hst_" + GatewayAuthenticator.base64URL(Data(forged.utf8)) + "." + parts[1]
        var lastByte = String(parts[1])
        lastByte = String(lastByte.dropLast()) + (lastByte.hasSuffix("0") ? "1" : "0")
        for token in [forgedToken, "hst_" + parts[0] + "." + lastByte, "hst_" + parts[0], "hst_garbage"] {
            let error = Self.refusal { _ = try auth.identify(header: Self.headers([("authorization", "Bearer \(token)")])) }
            #expect(error?.code == "invalid_api_key" && error?.message.contains(token) == false, "\(token)")
        }

        // Expiry, by the clock: valid at +59 s, expired at +60 s.
        clock.advance(59)
        #expect(try auth.identify(header: bearer).caller.viaToken)
        clock.advance(1)
        #expect(Self.refusal { _ = try auth.identify(header: bearer) }?.code == "token_expired")
    }

    /// A signing client that authenticates with a token may sign with the token or its secret.
    @Test func aTokenCanSignForItsClient() throws {
        let clock = ManualClock(RateLimiterTests.noon)
        let auth = Self.authenticator(clock)
        let signer = try #require(auth.client(forKey: Self.signerKey))
        let token = auth.issueToken(for: signer, seconds: nil).token
        for (secret, offset) in [(token, 0), (Self.hmacSecret, 1)] {
            let header = Self.headers(
                [("authorization", "Bearer \(token)")]
                    + signature(secret: secret, method: "POST", path: "/v1/x", timestamp: clock.unix - offset, body: "{}"))
            let identity = try auth.identify(header: header)
            #expect(identity.caller.viaToken && identity.signs)
            try auth.verify(identity, method: "POST", path: "/v1/x", header: header, body: Data("{}".utf8))
        }
    }

    /// A secret never prints: not interpolated, not described, not dumped.
    @Test func secretsAreRedacted() {
        let secret = GatewaySecret(Self.hmacSecret)
        var dumped = ""
        dump(secret, to: &dumped)
        for text in ["\(secret)", String(describing: secret), String(reflecting: secret), dumped] {
            #expect(!text.contains(Self.hmacSecret), "\(text)")
        }
        let client = GatewayConfiguration.Client(name: "c", keyDigest: [], hmacSecret: secret)
        var dumpedClient = ""
        dump(client, to: &dumpedClient)
        #expect(!dumpedClient.contains(Self.hmacSecret) && !"\(client)".contains(Self.hmacSecret))
    }
}
