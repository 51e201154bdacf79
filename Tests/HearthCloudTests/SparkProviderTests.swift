import Crypto
import Foundation
import HearthFakeServers
import HearthProviders
import NIOHTTP1
import Testing

@testable import HearthCloud

/// SparkProvider: the signature against iFlytek's documented example, and the WebSocket
/// protocol against a fake Spark server on a loopback socket that checks signatures as Spark does.
@Suite struct SparkProviderTests {
    static let appID = "a1b2c3d4"
    static let apiKey = "addd2272b6d8b7c8abdd79531420ca3b"
    static let apiSecret = "MjlmNzkzNmZkMDQ2OTc0ZDdmNGE2ZTZi"
    let request = ChatRequest(
        messages: [.system("你是一个助手。"), .user("你好")], options: ChatOptions(temperature: 0, topK: 9, maxTokens: 9))

    /// The values iFlytek's documentation gives for this host, date, path, key and secret, as
    /// Python's reference code computes them:
    ///
    ///     origin = f"host: {host}\ndate: {date}\nGET {path} HTTP/1.1"
    ///     sig = base64.b64encode(hmac.new(secret.encode(), origin.encode(), hashlib.sha256).digest()).decode()
    ///     auth = base64.b64encode(f'api_key="{key}", algorithm="hmac-sha256", headers="host date request-line", signature="{sig}"'.encode()).decode()
    @Test func signatureMatchesTheReferenceExample() {
        let signature = SparkSigner.signature(
            host: "spark-api.xf-yun.com", date: "Fri, 05 May 2023 10:43:39 GMT", path: "/v1.1/chat",
            apiSecret: Self.apiSecret)
        #expect(signature == "z5gHdu3pxVV4ADMyk467wOWDQ9q6BQzR3nfMTjc/DaQ=")
        #expect(
            SparkSigner.authorization(apiKey: Self.apiKey, signature: signature)
                == "YXBpX2tleT0iYWRkZDIyNzJiNmQ4YjdjOGFiZGQ3OTUzMTQyMGNhM2IiLCBhbGdvcml0aG09ImhtYWMtc2hhMjU2IiwgaGVhZGVycz0iaG9zdCBkYXRlIHJlcXVlc3QtbGluZSIsIHNpZ25hdHVyZT0iejVnSGR1M3B4VlY0QURNeWs0Njd3T1dEUTlxNkJRelIzbmZNVGpjL0RhUT0i"
        )
    }

    @Test func signedQueryEncodesEveryReservedCharacter() throws {
        let endpoint = try #require(WebSocketEndpoint("wss://spark-api.xf-yun.com/v1.1/chat"))
        let date = try #require(HTTPDate.parse("Fri, 05 May 2023 10:43:39 GMT"))
        let query = SparkSigner.signedQuery(
            endpoint: endpoint, apiKey: Self.apiKey, apiSecret: Self.apiSecret, date: date)
        #expect(query.hasPrefix("authorization=YXBpX2tleT0i"))
        #expect(query.contains("&date=Fri%2C%2005%20May%202023%2010%3A43%3A39%20GMT&host=spark-api.xf-yun.com"))
        #expect(!query.contains("+") && !query.contains("/") && !query.contains(" "))
    }

    @Test func endpointParsing() throws {
        let plain = try #require(WebSocketEndpoint("ws://127.0.0.1:8080/v3.5/chat?x=1"))
        #expect(plain.host == "127.0.0.1" && plain.port == 8080 && plain.path == "/v3.5/chat" && !plain.tls)
        #expect(plain.hostHeader == "127.0.0.1:8080")
        let secure = try #require(WebSocketEndpoint("wss://spark-api.xf-yun.com/v4.0/chat"))
        #expect(secure.port == 443 && secure.tls && secure.hostHeader == "spark-api.xf-yun.com")
        #expect(WebSocketEndpoint("https://spark-api.xf-yun.com/v1") == nil)
        #expect(WebSocketEndpoint("ws://host:99999/x") == nil)
    }

    // MARK: Over the socket

    /// Checks a handshake the way Spark does; `nil` accepts.
    static func verify(_ head: HTTPRequestHead) -> (status: Int, body: String)? {
        let refuse = (401, #"{"message":"HMAC signature does not match"}"#)
        guard let query = URLComponents(string: head.uri)?.queryItems,
            let authorization = query.first(where: { $0.name == "authorization" })?.value,
            let date = query.first(where: { $0.name == "date" })?.value,
            let host = query.first(where: { $0.name == "host" })?.value,
            let decoded = Data(base64Encoded: authorization).map({ String(decoding: $0, as: UTF8.self) })
        else { return refuse }
        guard let parsedDate = HTTPDate.parse(date), abs(parsedDate.timeIntervalSinceNow) < 300 else {
            return (403, #"{"message":"HMAC signature cannot be verified, a valid date or x-date header is required for HMAC Authentication"}"#)
        }
        let path = head.uri.prefix { $0 != "?" }
        let origin = "host: \(host)\ndate: \(date)\nGET \(path) HTTP/1.1"
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data(origin.utf8), using: SymmetricKey(data: Data(Self.apiSecret.utf8)))
        let expected =
            "api_key=\"\(Self.apiKey)\", algorithm=\"hmac-sha256\", headers=\"host date request-line\", signature=\"\(Data(mac).base64EncodedString())\""
        return decoded == expected ? nil : refuse
    }

    static func frame(_ status: Int, _ content: String, usage: (Int, Int)? = nil, code: Int = 0) -> String {
        var payload: [String: Any] = [
            "choices": ["status": status, "seq": status, "text": [["content": content, "role": "assistant", "index": 0]]]
        ]
        if let usage {
            payload["usage"] = [
                "text": [
                    "question_tokens": 2, "prompt_tokens": usage.0, "completion_tokens": usage.1,
                    "total_tokens": usage.0 + usage.1,
                ]
            ]
        }
        return jsonString([
            "header": ["code": code, "message": "Success", "sid": "cht000b1234@dx18f0", "status": status],
            "payload": payload,
        ])
    }

    func provider(_ server: TestWebSocketServer, secret: String = apiSecret, idle: Duration = .seconds(3))
        -> SparkProvider
    {
        var configuration = SparkProvider.Configuration(
            appID: Self.appID, apiKey: CloudSecret(Self.apiKey), apiSecret: CloudSecret(secret),
            timeouts: CloudTimeouts(connect: .seconds(2), idle: idle), retry: quickRetry)
        configuration.url = server.url
        return SparkProvider(configuration)
    }

    @Test func streamsAnAnswerUntilStatusTwo() async throws {
        let server = try await TestWebSocketServer.start(accept: Self.verify) { _, _, out in
            try await out.text(Self.frame(0, "你好"))
            try await out.fragmentedText(Self.frame(1, "，我是讯飞"), at: 60)
            try await out.text(Self.frame(2, "星火。", usage: (5, 9)))
            return .waitForClientClose
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()

        #expect(result.error == nil)
        #expect(result.text == "你好，我是讯飞星火。")
        #expect(result.servedBy == ["spark"])
        #expect(result.usage?.promptTokens == 5 && result.usage?.completionTokens == 9)
        #expect(result.finish == .length, "9 completion tokens with maxTokens 9")

        let sent = try #require(server.messages.first)
        #expect(sent.uri.hasPrefix("/v3.5/chat?authorization="))
        let json = try #require(
            (try? JSONSerialization.jsonObject(with: Data(sent.message.utf8))) as? [String: Any])
        let header = try #require(json["header"] as? [String: Any])
        #expect(header["app_id"] as? String == Self.appID)
        let chat = try #require((json["parameter"] as? [String: Any])?["chat"] as? [String: Any])
        #expect(chat["domain"] as? String == "generalv3.5")
        #expect(chat["temperature"] as? Double == 0.01, "Spark's temperature is (0, 1]")
        #expect(chat["top_k"] as? Int == 6, "Spark's top_k is 1...6")
        #expect(chat["max_tokens"] as? Int == 9)
        let text = try #require(
            ((json["payload"] as? [String: Any])?["message"] as? [String: Any])?["text"] as? [[String: String]])
        #expect(text == [["role": "system", "content": "你是一个助手。"], ["role": "user", "content": "你好"]])
    }

    @Test func wrongSecretIsRefusedAsUnauthorizedWithoutLeakingIt() async throws {
        let wrong = "WRONG-SECRET-0123456789"
        let server = try await TestWebSocketServer.start(accept: Self.verify) { _, _, _ in .close }
        let result = await collect(provider(server, secret: wrong).stream(request))
        await server.stop()
        let error = try #require(result.providerError)
        #expect(error.code == .unauthorized)
        #expect(error.message.contains("HMAC signature does not match"))
        #expect(error.message.contains("clock"))
        #expect(server.handshakeURIs.count == 1, "unauthorized is not retried")
        for text in [error.description, "\(error)", String(describing: error.underlying)] {
            #expect(!text.contains(wrong) && !text.contains(Self.apiKey))
        }
    }

    @Test func clockSkewIsRefusedAsUnauthorized() async throws {
        let server = try await TestWebSocketServer.start(accept: Self.verify) { _, _, _ in .close }
        var configuration = provider(server).configuration
        configuration.retry = .none
        let skewed = SparkProvider(configuration, now: { Date().addingTimeInterval(-3600) })
        let result = await collect(skewed.stream(request))
        await server.stop()
        #expect(result.providerError?.code == .unauthorized)
        #expect(result.providerError?.message.contains("valid date") == true)
    }

    @Test(arguments: [
        (10907, ProviderError.Code.contextLengthExceeded(tokens: nil, limit: nil)),
        (11202, .rateLimited(retryAfter: nil)),
        (11200, .unauthorized),
        (10013, .invalidRequest),
        (10110, .server(status: 503)),
    ])
    func errorCodesAreMapped(_ sparkCode: Int, _ expected: ProviderError.Code) async throws {
        let server = try await TestWebSocketServer.start(accept: Self.verify) { _, _, out in
            try await out.text(
                jsonString(["header": ["code": sparkCode, "message": "error \(sparkCode)", "sid": "cht1", "status": 2]]))
            return .waitForClientClose
        }
        var configuration = provider(server).configuration
        configuration.retry = .none
        let result = await collect(SparkProvider(configuration).stream(request))
        await server.stop()
        #expect(result.providerError?.code == expected)
        #expect(result.providerError?.message.contains("error \(sparkCode)") == true)
        #expect(result.providerError?.message.contains("cht1") == true, "the sid helps iFlytek support")
    }

    @Test func connectionClosedMidAnswerIsANetworkError() async throws {
        let server = try await TestWebSocketServer.start(accept: Self.verify) { _, _, out in
            try await out.text(Self.frame(0, "一半"))
            try await Task.sleep(for: .milliseconds(20))
            return .close  // no status 2, no close frame
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.text == "一半")
        #expect(result.providerError?.code == .network)
        #expect(server.handshakeURIs.count == 1, "no retry after text")
    }

    @Test func closeFrameBeforeTheEndIsANetworkError() async throws {
        let server = try await TestWebSocketServer.start(accept: Self.verify) { _, _, out in
            try await out.text(Self.frame(1, "部分"))
            try await out.close(code: 1011)
            return .waitForClientClose
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.providerError?.code == .network)
        #expect(result.providerError?.message.contains("1011") == true)
    }

    @Test func silentSocketHitsTheIdleTimeout() async throws {
        let server = try await TestWebSocketServer.start(accept: Self.verify) { _, _, _ in .waitForClientClose }
        let clock = ContinuousClock()
        let start = clock.now
        let result = await collect(provider(server, idle: .milliseconds(400)).stream(request))
        await server.stop()
        #expect(result.providerError?.code == .timeout)
        #expect(clock.now - start < .seconds(14), "the idle timeout fired; the collect limit is 15 s")
    }

    @Test func missingCredentialsAreUnauthorized() async {
        let spark = SparkProvider.fromCredentials(CloudCredentials())
        #expect(await spark.availability == .unavailable(.unauthorized))
        let result = await collect(spark.stream(request))
        #expect(result.providerError?.code == .unauthorized)
        #expect(result.providerError?.message.contains("SPARK_API_SECRET") == true)
    }

    @Test func unreachableServerIsANetworkError() async throws {
        let port = try await closedPort()
        var configuration = SparkProvider.Configuration(
            appID: Self.appID, apiKey: CloudSecret(Self.apiKey), apiSecret: CloudSecret(Self.apiSecret),
            timeouts: testTimeouts, retry: .none)
        configuration.url = "ws://127.0.0.1:\(port)/v3.5/chat"
        let result = await collect(SparkProvider(configuration).stream(request))
        #expect(result.providerError?.code == .network)
    }
}
