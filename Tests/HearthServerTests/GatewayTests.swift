import Foundation
import HearthFakeServers
import HearthLocal
import HearthServer
import HearthTestSupport
import NIOCore
import Testing

/// `hearth serve --config`: the gateway in-process on loopback sockets, over the `phi3-mha`
/// fixture, a fake OpenAI upstream, a real SQLite file and a clock the tests move by hand.
@Suite(.serialized) struct GatewayTests {
    static let appKey = "hk-app-7f3a9c1e5b2d4f6081a3c5e7"
    static let opsKey = "hk-ops-29b4d6f8a0c2e4f6a8b0c2d4"
    static let limitedKey = "hk-lim-0a1b2c3d4e5f60718293a4b5"
    static let quotaKey = "hk-quo-5b4a39281706f5e4d3c2b1a0"
    static let appSecret = "hmac-secret-5e8f1a3c7b9d2e4f6a8c"
    static let upstreamKey = "sk-upstream-9c7e5a3b1d2f4e6a8c0b"
    static let secrets = [appKey, opsKey, limitedKey, quotaKey, appSecret, upstreamKey]

    /// A gateway over the fixture: `app` signs (HMAC), `ops` is admin, `limited` has small limits;
    /// routes `local`, `cloud` (OpenAI at `upstream`, local fallback) and `cloud-only`.
    struct Setup {
        let harness: ServerHarness
        let clock: ManualClock
        let logs: LogCapture
        let directory: URL
        let upstream: TestHTTPServer

        func stop() async throws {
            try await harness.stop()
            await upstream.stop()
            try? FileManager.default.removeItem(at: directory)
        }

        /// Sends a JSON body as `app`, signed at the clock's time (or `timestamp`).
        func signed(
            _ path: String, _ json: [String: Any], timestamp: Int? = nil, key: String = GatewayTests.appKey,
            secret: String = GatewayTests.appSecret, extra: [(String, String)] = []
        ) async throws -> ServerHarness.Reply {
            let body = String(decoding: try JSONSerialization.data(withJSONObject: json), as: UTF8.self)
            let headers = [("authorization", "Bearer \(key)")]
                + signature(secret: secret, method: "POST", path: path, timestamp: timestamp ?? clock.unix, body: body) + extra
            return try await harness.send(.POST, path, body: body, headers: headers)
        }

        func send(_ path: String, _ json: [String: Any], key: String?, extra: [(String, String)] = []) async throws -> ServerHarness.Reply {
            try await harness.send(path, json: json, headers: (key.map { [("authorization", "Bearer \($0)")] } ?? []) + extra)
        }

        /// No secret in the captured logs.
        func expectNoSecretsLogged(_ more: [String] = []) {
            let text = logs.text
            #expect(!text.isEmpty)
            for secret in GatewayTests.secrets + more { #expect(!text.contains(secret), "a secret reached the log") }
        }
    }

    static func setup(
        clock: ManualClock = ManualClock(), cache: String = #"{"ttl_seconds": 60, "max_entries": 2}"#, filterOutput: Bool = false,
        context: Int = 256
    ) async throws -> Setup {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-gateway-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try "# blocked words\nforbiddenword\nre:pine(apple)?s?\n".write(
            to: directory.appendingPathComponent("blocked.txt"), atomically: true, encoding: .utf8)
        let upstream = try await fakeOpenAI()
        let config = """
            {"clients": [{"name": "app", "key_sha256": "\(sha256Hex(appKey))", "hmac_secret_env": "APP_HMAC_SECRET",
                          "requests_per_minute": 60, "tokens_per_day": 100000},
                         {"name": "ops", "key_env": "OPS_KEY", "admin": true},
                         {"name": "limited", "key_sha256": "\(sha256Hex(limitedKey))", "requests_per_minute": 3, "models": ["local", "cloud"]},
                         {"name": "quota", "key_sha256": "\(sha256Hex(quotaKey))", "tokens_per_day": 60}],
             "models": {"local": {"provider": "local"},
                        "cloud": {"provider": "openai", "model": "gpt-4o-mini", "fallback": ["local"], "timeout_seconds": 5},
                        "cloud-only": {"provider": "openai"}},
             "cache": \(cache),
             "content_filter": {"file": "blocked.txt", "output": \(filterOutput)},
             "usage_db": "usage.sqlite", "cors_origins": ["https://app.example"], "token_ttl_seconds": 120}
            """
        let environment = [
            "APP_HMAC_SECRET": appSecret, "OPS_KEY": opsKey, "OPENAI_API_KEY": upstreamKey, "OPENAI_BASE_URL": upstream.baseURL,
        ]
        let configuration = try GatewayConfiguration.parse(Data(config.utf8), directory: directory, environment: environment)
        let logs = LogCapture()
        let harness = try await ServerHarness(context: context, logger: logs.logger) { local in
            try Gateway(configuration: configuration, local: local, environment: environment, clock: clock.clock)
        }
        return Setup(harness: harness, clock: clock, logs: logs, directory: directory, upstream: upstream)
    }

    static func chat(_ model: String, _ text: String, maxTokens: Int = 3, temperature: Double = 0, stream: Bool = false) -> [String: Any] {
        var body: [String: Any] = [
            "model": model, "messages": [["role": "user", "content": text]], "max_tokens": maxTokens, "temperature": temperature,
        ]
        if stream {
            body["stream"] = true
            body["stream_options"] = ["include_usage": true]
        }
        return body
    }

    static func usage(_ reply: ServerHarness.Reply) -> (prompt: Int, completion: Int) {
        let usage = reply.json["usage"] as? [String: Any]
        // Anthropic's input_tokens leaves out the tokens read from the cache (the Messages API's meaning).
        let anthropicPrompt = (usage?["input_tokens"] as? Int).map { $0 + (usage?["cache_read_input_tokens"] as? Int ?? 0) }
        return (usage?["prompt_tokens"] as? Int ?? anthropicPrompt ?? -1,
                usage?["completion_tokens"] as? Int ?? usage?["output_tokens"] as? Int ?? -1)
    }

    static func text(_ reply: ServerHarness.Reply) -> String {
        let choice = (reply.json["choices"] as? [[String: Any]])?.first
        return (choice?["message"] as? [String: Any])?["content"] as? String ?? ""
    }

    /// Text, finish reason, usage and `hearth` provider events of an OpenAI chat stream.
    static func streamed(_ body: String) -> (text: String, finish: String?, usage: (Int, Int)?, providers: [[String: Any]], done: Bool) {
        let (payloads, _) = sseData(body)
        var text = ""
        var finish: String?
        var usage: (Int, Int)?
        var providers: [[String: Any]] = []
        for payload in payloads where payload != "[DONE]" {
            let chunk = parse(payload)
            if let hearth = chunk["hearth"] as? [String: Any] { providers.append(hearth) }
            if let u = chunk["usage"] as? [String: Any], let p = u["prompt_tokens"] as? Int, let c = u["completion_tokens"] as? Int {
                usage = (p, c)
            }
            guard let choice = (chunk["choices"] as? [[String: Any]])?.first else { continue }
            text += (choice["delta"] as? [String: Any])?["content"] as? String ?? ""
            if let reason = choice["finish_reason"] as? String { finish = reason }
        }
        return (text, finish, usage, providers, payloads.last == "[DONE]")
    }

    // MARK: Configuration

    @Test func configurationErrorsNameTheKeyAndNeverTheSecret() throws {
        let environment = ["APP_HMAC_SECRET": Self.appSecret, "OPS_KEY": Self.opsKey, "SHORT_KEY": "abc123"]
        func error(_ json: String) -> GatewayConfigurationError? {
            do {
                _ = try GatewayConfiguration.parse(Data(json.utf8), file: "gateway.json", environment: environment)
                return nil
            } catch let error as GatewayConfigurationError {
                return error
            } catch {
                return nil
            }
        }
        let models = #""models": {"local": {"provider": "local"}}"#
        let cases: [(String, String)] = [
            (#"{"clients": [{"name": "a", "key_env": "OPS_KEY"}]}"#, "models"),
            ("{\(models), \"clients\": [{\"name\": \"a\", \"key_sha256\": \"\(Self.appKey)\"}]}", "clients[0].key_sha256"),
            ("{\(models), \"clients\": [{\"name\": \"a\", \"key_env\": \"NOT_SET_ANYWHERE\"}]}", "clients[0].key_env"),
            ("{\(models), \"clients\": [{\"name\": \"a\", \"key_env\": \"OPS_KEY\", \"requests_per_min\": 5}]}", "clients[0].requests_per_min"),
            ("{\(models), \"clients\": [{\"name\": \"a\", \"key_env\": \"OPS_KEY\", \"tokens_per_day\": -1}]}", "clients[0].tokens_per_day"),
            ("{\(models), \"clients\": [{\"name\": \"a\", \"key_env\": \"OPS_KEY\", \"models\": [\"gpt-5\"]}]}", "clients[0].models[0]"),
            (#"{"models": {"m": {"provider": "openai", "fallback": ["nope"]}}, "clients": [{"name": "a", "key_env": "OPS_KEY"}]}"#, "models.m.fallback[0]"),
            (#"{"models": {"m": {"provider": "gemini"}}, "clients": [{"name": "a", "key_env": "OPS_KEY"}]}"#, "models.m.provider"),
            ("{\(models), \"clients\": [{\"name\": \"a\", \"key_env\": \"OPS_KEY\"}, {\"name\": \"b\", \"key_env\": \"OPS_KEY\"}]}", "clients[1]"),
            ("{\(models), \"clients\": [{\"name\": \"a\", \"key_env\": \"OPS_KEY\"}], \"content_filter\": {\"file\": \"/nonexistent/blocked.txt\"}}", "content_filter.file"),
            // A key from the environment must be long; a token may live a day at most.
            ("{\(models), \"clients\": [{\"name\": \"a\", \"key_env\": \"SHORT_KEY\"}]}", "clients[0].key_env"),
            ("{\(models), \"clients\": [{\"name\": \"a\", \"key_env\": \"OPS_KEY\"}], \"token_ttl_seconds\": 604800}", "token_ttl_seconds"),
        ]
        for (json, key) in cases {
            let found = error(json)
            #expect(found?.key == key, "expected an error at \(key), got \(String(describing: found))")
            let text = "\(String(describing: found))"
            #expect(text.contains("gateway.json"))
            for secret in [Self.appKey, Self.opsKey, Self.appSecret] { #expect(!text.contains(secret), "a secret in \(text)") }
        }
        // The contract's example shape is accepted.
        let contract = """
            {"clients": [{"name": "app", "key_sha256": "\(sha256Hex(Self.appKey))", "hmac_secret_env": "APP_HMAC_SECRET",
                          "requests_per_minute": 60, "tokens_per_day": 100000},
                         {"name": "ops", "key_env": "OPS_KEY", "admin": true}],
             "models": {"local": {"provider": "local"}, "gpt-4o-mini": {"provider": "openai", "fallback": ["local"]}},
             "cache": {"ttl_seconds": 3600, "max_entries": 1000}, "usage_db": "usage.sqlite"}
            """
        let parsed = try GatewayConfiguration.parse(Data(contract.utf8), environment: environment)
        #expect(parsed.clients.map(\.name) == ["app", "ops"])
        #expect(parsed.routes["gpt-4o-mini"]?.fallback == ["local"])
        #expect("\(String(describing: parsed.clients[0].hmacSecret))".contains(Self.appSecret) == false)
    }

    // MARK: Authentication

    @Test func keysSignaturesAndTokens() async throws {
        let s = try await Self.setup()
        try await withCleanup({ try? await s.stop() }) {
            let body = Self.chat("local", "Hello there", maxTokens: 2)
            // Missing and wrong keys.
            var reply = try await s.send("/v1/chat/completions", body, key: nil)
            #expect(reply.status == 401 && (reply.json["error"] as? [String: Any])?["code"] as? String == "invalid_api_key")
            reply = try await s.send("/v1/chat/completions", body, key: "hk-wrong-key-000000000000")
            #expect(reply.status == 401)
            reply = try await s.harness.send(.GET, "/v1/models")
            #expect(reply.status == 401)
            // The signing client without a signature.
            reply = try await s.send("/v1/chat/completions", body, key: Self.appKey)
            #expect(reply.status == 401 && (reply.json["error"] as? [String: Any])?["code"] as? String == "signature_missing")
            // Valid signature.
            let bodyText = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
            let headers = [("authorization", "Bearer \(Self.appKey)")]
                + signature(secret: Self.appSecret, method: "POST", path: "/v1/chat/completions", timestamp: s.clock.unix, body: bodyText)
            reply = try await s.harness.send(.POST, "/v1/chat/completions", body: bodyText, headers: headers)
            #expect(reply.status == 200)
            // The same request again: a replay.
            reply = try await s.harness.send(.POST, "/v1/chat/completions", body: bodyText, headers: headers)
            #expect(reply.status == 401 && (reply.json["error"] as? [String: Any])?["code"] as? String == "signature_replayed")
            // Tampered body: the signature of the original (at a fresh timestamp), another body sent.
            s.clock.advance(1)
            let tampered = [headers[0]]
                + signature(secret: Self.appSecret, method: "POST", path: "/v1/chat/completions", timestamp: s.clock.unix, body: bodyText)
            reply = try await s.harness.send(
                .POST, "/v1/chat/completions", body: bodyText.replacingOccurrences(of: "Hello", with: "Hallo"), headers: tampered)
            #expect(reply.status == 401 && (reply.json["error"] as? [String: Any])?["code"] as? String == "signature_invalid")
            // Expired and future timestamps; a wrong secret.
            reply = try await s.signed("/v1/chat/completions", body, timestamp: s.clock.unix - 301)
            #expect(reply.status == 401 && (reply.json["error"] as? [String: Any])?["code"] as? String == "signature_expired")
            reply = try await s.signed("/v1/chat/completions", body, timestamp: s.clock.unix + 301)
            #expect(reply.status == 401 && (reply.json["error"] as? [String: Any])?["code"] as? String == "signature_expired")
            reply = try await s.signed("/v1/chat/completions", body, secret: "not-the-secret-000000000")
            #expect(reply.status == 401 && (reply.json["error"] as? [String: Any])?["code"] as? String == "signature_invalid")
            // Within the window: accepted (a different body, so a different signature).
            reply = try await s.signed("/v1/chat/completions", Self.chat("local", "Hello again", maxTokens: 2), timestamp: s.clock.unix - 290)
            #expect(reply.status == 200)
            // A client without a secret needs only its key.
            reply = try await s.send("/v1/chat/completions", body, key: Self.opsKey)
            #expect(reply.status == 200)

            // Tokens: exchanged for the key (signed), usable as bearer and as signing key, expiring.
            reply = try await s.signed("/v1/auth/token", ["expires_in": 60])
            #expect(reply.status == 200)
            let token = reply.json["token"] as? String ?? ""
            #expect(token.hasPrefix("hst_") && reply.json["expires_in"] as? Int == 60)
            reply = try await s.signed("/v1/chat/completions", Self.chat("local", "With a token", maxTokens: 2), key: token, secret: token)
            #expect(reply.status == 200)
            reply = try await s.send("/v1/chat/completions", Self.chat("local", "Unsigned token", maxTokens: 2), key: token)
            #expect(reply.status == 401)
            reply = try await s.signed("/v1/auth/token", [:], key: token, secret: token)
            #expect(reply.status == 403)
            reply = try await s.send("/v1/auth/token", [:], key: Self.opsKey)
            let opsToken = reply.json["token"] as? String ?? ""
            reply = try await s.harness.send(.GET, "/v1/models", headers: [("authorization", "Bearer \(opsToken)")])
            #expect(reply.status == 200 && (reply.json["data"] as? [Any])?.count == 3)
            s.clock.advance(121)
            reply = try await s.harness.send(.GET, "/v1/models", headers: [("authorization", "Bearer \(opsToken)")])
            #expect(reply.status == 401 && (reply.json["error"] as? [String: Any])?["code"] as? String == "token_expired")
            reply = try await s.harness.send(.GET, "/v1/models", headers: [("authorization", "Bearer \(opsToken.dropLast())0")])
            #expect(reply.status == 401)
            s.expectNoSecretsLogged([token, opsToken])
            try await s.stop()
        }
    }

    // MARK: Limits and usage

    @Test func limitsRefuseBeforeWorkAndResetWithTheClock() async throws {
        // Start two minutes before midnight UTC, so the daily quota resets within the test.
        let midnight = 1_773_100_800 - 1_773_100_800 % 86400 + 86400
        let s = try await Self.setup(clock: ManualClock(Date(timeIntervalSince1970: Double(midnight - 120))))
        try await withCleanup({ try? await s.stop() }) {
            // Requests per minute: three pass, with the remaining count in the headers.
            for index in 0..<3 {
                let reply = try await s.send("/v1/chat/completions", Self.chat("local", "One \(index)", maxTokens: 1), key: Self.limitedKey)
                #expect(reply.status == 200)
                #expect(reply.headers["x-ratelimit-limit-requests"].first == "3")
                #expect(reply.headers["x-ratelimit-remaining-requests"].first == String(2 - index))
            }
            // The fourth in the minute is refused before any work: the cloud upstream sees nothing.
            var reply = try await s.send("/v1/chat/completions", Self.chat("cloud", "Four"), key: Self.limitedKey)
            #expect(reply.status == 429 && (reply.json["error"] as? [String: Any])?["code"] as? String == "rate_limit_exceeded")
            #expect(s.upstream.requests.isEmpty)
            #expect(reply.headers["x-ratelimit-remaining-requests"].first == "0")
            let retry = Int(reply.headers["retry-after"].first ?? "") ?? 0
            #expect(retry >= 1 && retry <= 60)
            s.clock.advance(Double(retry))
            reply = try await s.send("/v1/chat/completions", Self.chat("local", "Five", maxTokens: 1), key: Self.limitedKey)
            #expect(reply.status == 200)
            // Tokens per day are reserved at admission (prompt estimate + max_tokens): a request that
            // may use more than is left is refused before any work, until midnight UTC.
            reply = try await s.send("/v1/chat/completions", Self.chat("local", "Quota", maxTokens: 1), key: Self.quotaKey)
            #expect(reply.status == 200 && reply.headers["x-ratelimit-remaining-tokens"].first == "60")
            let used = Self.usage(reply)
            reply = try await s.send("/v1/chat/completions", Self.chat("cloud", "Quota again", maxTokens: 60), key: Self.quotaKey)
            #expect(reply.status == 429 && (reply.json["error"] as? [String: Any])?["code"] as? String == "token_quota_exceeded")
            #expect(reply.headers["x-ratelimit-remaining-tokens"].first == "\(60 - used.prompt - used.completion)")
            #expect(s.upstream.requests.isEmpty)
            let untilMidnight = Int(reply.headers["retry-after"].first ?? "") ?? 0
            #expect(untilMidnight >= 1 && untilMidnight <= 120)
            s.clock.advance(Double(untilMidnight))
            reply = try await s.send("/v1/chat/completions", Self.chat("local", "Next day", maxTokens: 1), key: Self.quotaKey)
            #expect(reply.status == 200 && reply.headers["x-ratelimit-remaining-tokens"].first == "60")
            // Other clients were never limited; a route outside a client's list is refused.
            reply = try await s.send("/v1/chat/completions", Self.chat("local", "Ops", maxTokens: 1), key: Self.opsKey)
            #expect(reply.status == 200 && reply.headers["x-ratelimit-limit-requests"].isEmpty)
            reply = try await s.send("/v1/chat/completions", Self.chat("cloud-only", "Seven"), key: Self.limitedKey)
            #expect(reply.status == 403)
            s.expectNoSecretsLogged()
            try await s.stop()
        }
    }

    @Test func usageEqualsTheSumOfTheResponsesAndSurvivesARestart() async throws {
        let s = try await Self.setup(cache: #"{"ttl_seconds": 60, "max_entries": 10}"#)
        try await withCleanup({ try? await s.stop() }) {
            var prompt = 0
            var completion = 0
            func add(_ reply: ServerHarness.Reply) {
                let usage = Self.usage(reply)
                prompt += usage.prompt
                completion += usage.completion
            }
            var reply = try await s.send("/v1/chat/completions", Self.chat("local", "Count me", maxTokens: 3), key: Self.opsKey)
            add(reply)
            reply = try await s.send("/v1/chat/completions", Self.chat("local", "Count me", maxTokens: 3), key: Self.opsKey)  // a cache hit
            #expect(reply.headers["x-hearth-cache"].first == "hit")
            add(reply)
            reply = try await s.send(
                "/v1/messages", ["model": "local", "max_tokens": 2, "messages": [["role": "user", "content": "Anthropic"]], "temperature": 0.5],
                key: Self.opsKey)
            #expect(reply.status == 200)
            add(reply)
            reply = try await s.send("/v1/chat/completions", Self.chat("cloud", "From the cloud", temperature: 0.7), key: Self.opsKey)
            #expect(reply.status == 200 && reply.headers["x-hearth-served-by"].first == "openai")
            add(reply)
            reply = try await s.send("/v1/chat/completions", Self.chat("local", "Streamed", maxTokens: 4, temperature: 0.9, stream: true), key: Self.opsKey)
            let streamed = Self.streamed(reply.body)
            prompt += streamed.usage?.0 ?? -1000
            completion += streamed.usage?.1 ?? -1000
            // An error is counted as a request and an error, with no tokens.
            reply = try await s.send("/v1/chat/completions", Self.chat("local", "", maxTokens: 100000), key: Self.opsKey)
            #expect(reply.status == 400)

            reply = try await s.harness.send(.GET, "/v1/usage", headers: [("authorization", "Bearer \(Self.opsKey)")])
            #expect(reply.status == 200)
            var total = reply.json["total"] as? [String: Any]
            #expect(total?["prompt_tokens"] as? Int == prompt)
            #expect(total?["completion_tokens"] as? Int == completion)
            #expect(total?["requests"] as? Int == 6 && total?["errors"] as? Int == 1 && total?["cache_hits"] as? Int == 1)
            let rows = reply.json["data"] as? [[String: Any]] ?? []
            #expect(Set(rows.compactMap { $0["model"] as? String }) == ["local", "cloud"])

            // The app sees its own usage only; an admin sees everyone's.
            let appUsage = try await s.harness.send(
                .GET, "/v1/usage",
                headers: [("authorization", "Bearer \(Self.appKey)")]
                    + signature(secret: Self.appSecret, method: "GET", path: "/v1/usage", timestamp: s.clock.unix, body: ""))
            #expect(appUsage.status == 200 && appUsage.json["client"] as? String == "app")
            #expect((appUsage.json["total"] as? [String: Any])?["requests"] as? Int == 0)
            let other = try await s.harness.send(
                .GET, "/v1/usage?client=ops",
                headers: [("authorization", "Bearer \(Self.appKey)")]
                    + signature(secret: Self.appSecret, method: "GET", path: "/v1/usage?client=ops", timestamp: s.clock.unix, body: ""))
            #expect(other.status == 403)

            // The ledger is a file: a new gateway on it reports the same totals.
            try await s.harness.stop()
            let configuration = try GatewayConfiguration.parse(
                Data(#"{"clients": [{"name": "ops", "key_env": "OPS_KEY", "admin": true}], "models": {"local": {"provider": "local"}}, "usage_db": "usage.sqlite"}"#.utf8),
                directory: s.directory, environment: ["OPS_KEY": Self.opsKey])
            let again = try await ServerHarness(context: 256) { local in
                try Gateway(configuration: configuration, local: local, environment: ["OPS_KEY": Self.opsKey])
            }
            try await withCleanup({ try? await again.stop() }) {
                reply = try await again.send(.GET, "/v1/usage", headers: [("authorization", "Bearer \(Self.opsKey)")])
                total = reply.json["total"] as? [String: Any]
                #expect(total?["prompt_tokens"] as? Int == prompt && total?["completion_tokens"] as? Int == completion)
                try await again.stop()
            }
            await s.upstream.stop()
            s.expectNoSecretsLogged()
            try? FileManager.default.removeItem(at: s.directory)
        }
    }

    // MARK: Cache and filter

    @Test func cacheHitsBypassesExpiresAndReplaysAsAStream() async throws {
        let s = try await Self.setup()
        try await withCleanup({ try? await s.stop() }) {
            let body = Self.chat("local", "Cache this answer", maxTokens: 4)
            let first = try await s.send("/v1/chat/completions", body, key: Self.opsKey)
            #expect(first.headers["x-hearth-cache"].first == "miss")
            let second = try await s.send("/v1/chat/completions", body, key: Self.opsKey)
            #expect(second.headers["x-hearth-cache"].first == "hit")
            #expect(Self.text(second) == Self.text(first) && !Self.text(first).isEmpty)
            #expect(Self.usage(second) == Self.usage(first))
            // A streaming request for the same answer replays it as a stream.
            var streamBody = body
            streamBody["stream"] = true
            streamBody["stream_options"] = ["include_usage": true]
            let stream = try await s.send("/v1/chat/completions", streamBody, key: Self.opsKey)
            #expect(stream.headers["x-hearth-cache"].first == "hit" && stream.headers["content-type"].first == "text/event-stream")
            let replay = Self.streamed(stream.body)
            let firstFinish = (first.json["choices"] as? [[String: Any]])?.first?["finish_reason"] as? String
            #expect(replay.text == Self.text(first) && replay.done && replay.finish == firstFinish)
            #expect(replay.usage.map { $0 == Self.usage(first) } == true)
            // Cache-Control: no-cache goes to the model.
            let bypass = try await s.send("/v1/chat/completions", body, key: Self.opsKey, extra: [("cache-control", "no-cache")])
            #expect(bypass.headers["x-hearth-cache"].first == "miss" && Self.text(bypass) == Self.text(first))
            // Sampling without a seed is never cached; with a seed it is.
            let random = try await s.send("/v1/chat/completions", Self.chat("local", "Cache this answer", maxTokens: 4, temperature: 0.8), key: Self.opsKey)
            #expect(random.headers["x-hearth-cache"].first == nil)
            var seeded = Self.chat("local", "Seeded", maxTokens: 3, temperature: 0.8)
            seeded["seed"] = 7
            _ = try await s.send("/v1/chat/completions", seeded, key: Self.opsKey)
            #expect(try await s.send("/v1/chat/completions", seeded, key: Self.opsKey).headers["x-hearth-cache"].first == "hit")
            // max_entries 2: a third answer evicts the least recently used (the first).
            _ = try await s.send("/v1/chat/completions", Self.chat("local", "Third answer", maxTokens: 2), key: Self.opsKey)
            #expect(try await s.send("/v1/chat/completions", body, key: Self.opsKey).headers["x-hearth-cache"].first == "miss")
            // The TTL (60 s).
            #expect(try await s.send("/v1/chat/completions", body, key: Self.opsKey).headers["x-hearth-cache"].first == "hit")
            s.clock.advance(61)
            #expect(try await s.send("/v1/chat/completions", body, key: Self.opsKey).headers["x-hearth-cache"].first == "miss")
            try await s.stop()
        }
    }

    @Test func contentFilterRefusesInputAndCutsOutput() async throws {
        let s = try await Self.setup(filterOutput: true)
        try await withCleanup({ try? await s.stop() }) {
            // Input: refused with 400 before anything goes upstream.
            var reply = try await s.send("/v1/chat/completions", Self.chat("cloud", "Tell me the ForbiddenWord now"), key: Self.opsKey)
            #expect(reply.status == 400 && (reply.json["error"] as? [String: Any])?["code"] as? String == "content_filtered")
            reply = try await s.send(
                "/v1/messages", ["model": "cloud", "max_tokens": 5, "messages": [["role": "user", "content": "pineapples?"]]], key: Self.opsKey)
            #expect(reply.status == 400 && (reply.json["error"] as? [String: Any])?["code"] as? String == "content_filtered")
            #expect(s.upstream.requests.isEmpty)
            // Whole words only: "forbiddenwords" is not the listed word.
            reply = try await s.send("/v1/chat/completions", Self.chat("local", "forbiddenwords are fine", maxTokens: 1), key: Self.opsKey)
            #expect(reply.status == 200)
            // Output: the upstream says "pineapple"; the answer stops before it.
            reply = try await s.send("/v1/chat/completions", Self.chat("cloud", "What is the word?", temperature: 0.5), key: Self.opsKey)
            #expect(reply.status == 200)
            #expect(Self.text(reply) == "The secret word is ")
            #expect((reply.json["choices"] as? [[String: Any]])?.first?["finish_reason"] as? String == "content_filter")
            reply = try await s.send("/v1/chat/completions", Self.chat("cloud", "What is the word?", temperature: 0.5, stream: true), key: Self.opsKey)
            let streamed = Self.streamed(reply.body)
            #expect(streamed.text == "The secret word is " && streamed.finish == "content_filter" && streamed.done)
            #expect(!reply.body.lowercased().contains("pineapple"))
            try await s.stop()
        }
    }

    // MARK: Cloud routes

    @Test func cloudRouteFailsOverToTheLocalModelMidAnswer() async throws {
        let s = try await Self.setup()
        try await withCleanup({ try? await s.stop() }) {
            // The upstream answers: served by OpenAI, the key went upstream and nowhere else.
            var reply = try await s.send("/v1/chat/completions", Self.chat("cloud", "Hello cloud", temperature: 0.5), key: Self.opsKey)
            #expect(reply.status == 200 && reply.headers["x-hearth-served-by"].first == "openai")
            #expect(Self.text(reply) == "The secret word is pineapple and more.")
            #expect(s.upstream.requests.first?.headers["authorization"].first == "Bearer \(Self.upstreamKey)")
            #expect(!reply.body.contains(Self.upstreamKey))
            // The upstream dies mid-answer: the local model continues the same answer.
            reply = try await s.send("/v1/chat/completions", Self.chat("cloud", "Tell me #drop", maxTokens: 4, temperature: 0, stream: true), key: Self.opsKey)
            #expect(reply.status == 200)
            let streamed = Self.streamed(reply.body)
            #expect(streamed.done && streamed.text.hasPrefix("The secret word is ") && streamed.text.count > "The secret word is ".count)
            #expect(streamed.providers.first?["served_by"] as? String == "openai")
            #expect(streamed.providers.last?["served_by"] as? String == "local" && streamed.providers.last?["switched_from"] as? String == "openai")
            // A 5xx or a 429 before any text: the local model answers the whole request.
            for trigger in ["#500", "#429"] {
                reply = try await s.send("/v1/chat/completions", Self.chat("cloud", "Fail \(trigger)", maxTokens: 3), key: Self.opsKey)
                #expect(reply.status == 200 && reply.headers["x-hearth-served-by"].first == "local")
                let hearth = reply.json["hearth"] as? [String: Any]
                #expect((hearth?["switched"] as? [[String: Any]])?.first?["from"] as? String == "openai")
            }
            // Without a fallback the upstream's failure is the answer.
            reply = try await s.send("/v1/chat/completions", Self.chat("cloud-only", "Fail #500"), key: Self.opsKey)
            #expect(reply.status == 502 && (reply.json["error"] as? [String: Any])?["code"] as? String == "upstream_error")
            reply = try await s.send("/v1/chat/completions", Self.chat("cloud-only", "Fail #429"), key: Self.opsKey)
            #expect(reply.status == 429 && reply.headers["retry-after"].first == "30")
            // An upstream 401 is not a reason to fail over, and the key it echoes never reaches the client.
            reply = try await s.send("/v1/chat/completions", Self.chat("cloud", "Fail #echo"), key: Self.opsKey)
            #expect(reply.status == 502 && (reply.json["error"] as? [String: Any])?["code"] as? String == "upstream_unauthorized")
            // The client gets a fixed message; the upstream's words (key redacted) go to the log only.
            #expect(!reply.body.contains("Incorrect API key") && !reply.body.contains(Self.upstreamKey), "\(reply.body)")
            #expect(s.logs.text.contains("redacted") && !s.logs.text.contains(Self.upstreamKey))
            // The same over Anthropic's API, streamed.
            reply = try await s.send(
                "/v1/messages",
                ["model": "cloud", "max_tokens": 4, "stream": true, "messages": [["role": "user", "content": "Again #drop"]]], key: Self.opsKey)
            #expect(reply.body.contains("event: hearth_provider") && reply.body.contains("\"switched_from\":\"openai\""))
            #expect(reply.body.contains("event: message_stop"))
            s.expectNoSecretsLogged()
            try await s.stop()
        }
    }

    @Test func otherRoutesNeedAClientAndCloudRoutesTakeChatOnly() async throws {
        let s = try await Self.setup()
        try await withCleanup({ try? await s.stop() }) {
            // /metrics, /tokenize and /v1/models need a client (and the signing client's signature).
            #expect(try await s.harness.send(.GET, "/metrics").status == 401)
            #expect(try await s.harness.send(.GET, "/metrics", headers: [("authorization", "Bearer \(Self.opsKey)")]).status == 200)
            #expect(try await s.harness.send(.GET, "/health").status == 200)
            var reply = try await s.signed("/tokenize", ["content": "Hello world"])
            #expect(reply.status == 200 && (reply.json["count"] as? Int ?? 0) > 0)
            reply = try await s.send("/tokenize", ["content": "Hello world"], key: Self.appKey)
            #expect(reply.status == 401)
            // The signing client's model list is all routes; the limited client's only its own.
            reply = try await s.harness.send(.GET, "/v1/models", headers: [("authorization", "Bearer \(Self.limitedKey)")])
            #expect(Set((reply.json["data"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }) == ["local", "cloud"])
            reply = try await s.harness.send(.GET, "/v1/models/cloud", headers: [("authorization", "Bearer \(Self.opsKey)")])
            #expect(reply.json["providers"] as? [String] == ["openai", "local"])
            // Raw completions and log-probabilities on the local route; refused on a cloud route.
            reply = try await s.send(
                "/v1/completions", ["model": "local", "prompt": "Once upon", "max_tokens": 2, "temperature": 0, "logprobs": 1], key: Self.opsKey)
            #expect(reply.status == 200 && reply.json["object"] as? String == "text_completion")
            #expect(reply.headers["x-hearth-served-by"].first == "local")
            reply = try await s.send("/v1/completions", ["model": "cloud", "prompt": "Once upon", "max_tokens": 2], key: Self.opsKey)
            #expect(reply.status == 400)
            var logprobs = Self.chat("cloud", "Hi")
            logprobs["logprobs"] = true
            #expect(try await s.send("/v1/chat/completions", logprobs, key: Self.opsKey).status == 400)
            // Unknown and missing models.
            reply = try await s.send("/v1/chat/completions", Self.chat("gpt-9", "Hi"), key: Self.opsKey)
            #expect(reply.status == 404 && (reply.json["error"] as? [String: Any])?["code"] as? String == "model_not_found")
            reply = try await s.send("/v1/chat/completions", ["messages": [["role": "user", "content": "Hi"]]], key: Self.opsKey)
            #expect(reply.status == 400)
            #expect(s.upstream.requests.isEmpty)
            try await s.stop()
        }
    }

    @Test func corsAnswersPreflightForConfiguredOriginsOnly() async throws {
        let s = try await Self.setup()
        try await withCleanup({ try? await s.stop() }) {
            var reply = try await s.harness.send(.OPTIONS, "/v1/chat/completions", headers: [("origin", "https://app.example")])
            #expect(reply.status == 204 && reply.headers["access-control-allow-origin"].first == "https://app.example")
            #expect(reply.headers["access-control-allow-headers"].first?.contains("x-signature") == true)
            reply = try await s.harness.send(.OPTIONS, "/v1/chat/completions", headers: [("origin", "https://evil.example")])
            #expect(reply.status == 403 && reply.headers["access-control-allow-origin"].isEmpty)
            reply = try await s.harness.send(.GET, "/v1/models", headers: [("origin", "https://app.example"), ("authorization", "Bearer \(Self.opsKey)")])
            #expect(reply.status == 200 && reply.headers["access-control-allow-origin"].first == "https://app.example")
            try await s.stop()
        }
    }
}
