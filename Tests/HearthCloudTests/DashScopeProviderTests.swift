import Foundation
import HearthFakeServers
import HearthProviders
import Testing

@testable import HearthCloud

/// DashScopeProvider (Qwen's native text-generation API) against the fake on a loopback socket:
/// event streams cut at arbitrary bytes, incremental and cumulative output, usage, finish
/// reasons, in-stream and HTTP errors, Retry-After, and continuation.
@Suite struct DashScopeProviderTests {
    static let key = "sk-dashscope-test-key-987654"
    static let summary = "一句话：杭州＝西湖＋龙井🍵，Café 也不少。"

    func fake() async throws -> FakeDashScopeGeneration {
        try await FakeDashScopeGeneration.start(
            .init(apiKey: Self.key, answers: FakeAnswers(["总结一下": Self.summary])))
    }

    func provider(
        _ fake: FakeDashScopeGeneration, key: String = key, incremental: Bool = true, idle: Duration = .seconds(3),
        retry: RetryPolicy = quickRetry
    ) -> DashScopeProvider {
        DashScopeProvider(
            .init(
                baseURL: fake.baseURL, apiKey: CloudSecret(key), model: .max, incrementalOutput: incremental,
                timeouts: CloudTimeouts(connect: .seconds(2), idle: idle), retry: retry))
    }

    func ask(_ text: String, options: ChatOptions = ChatOptions()) -> ChatRequest {
        ChatRequest(messages: [.system("你是助手。"), .user(text)], options: options)
    }

    @Test(arguments: [true, false])
    func streamsTheExactAnswerWithUsage(_ incremental: Bool) async throws {
        let fake = try await fake()
        let options = ChatOptions(temperature: 0.3, topP: 0.8, topK: 20, minP: 0.1, maxTokens: 64, stop: ["。"], seed: 7)
        let result = await collect(provider(fake, incremental: incremental).stream(ask("总结一下", options: options)))
        #expect(result.error == nil)
        #expect(result.text == Self.summary)
        #expect(result.deltas.count > 3)
        #expect(result.finish == .stop)
        #expect(result.servedBy == ["dashscope"])
        let usage = try #require(result.usage)
        #expect(usage.promptTokens == "你是助手。".count + "总结一下".count && usage.completionTokens == result.deltas.count)

        let sent = try #require(fake.requests.first)
        #expect(sent.uri == "/api/v1/services/aigc/text-generation/generation")
        #expect(sent.headers.first(name: "authorization") == "Bearer \(Self.key)")
        #expect(sent.headers.first(name: "x-dashscope-sse") == "enable")
        #expect(sent.headers.first(name: "accept") == "text/event-stream")
        let body = try #require(sent.json)
        #expect(body["model"] as? String == "qwen-max")
        let messages = try #require((body["input"] as? [String: Any])?["messages"] as? [[String: String]])
        #expect(messages == [["role": "system", "content": "你是助手。"], ["role": "user", "content": "总结一下"]])
        let parameters = try #require(body["parameters"] as? [String: Any])
        #expect(parameters["result_format"] as? String == "message")
        #expect(parameters["incremental_output"] as? Bool == incremental)
        #expect(parameters["temperature"] as? Double == 0.3 && parameters["top_p"] as? Double == 0.8)
        #expect(parameters["top_k"] as? Int == 20 && parameters["max_tokens"] as? Int == 64 && parameters["seed"] as? Int == 7)
        #expect(parameters["stop"] as? [String] == ["。"])
        #expect(parameters["min_p"] == nil, "DashScope has no min_p")
        #expect(fake.violations.isEmpty)
        await fake.stop()
    }

    @Test func lengthIsReportedAsSuch() async throws {
        let fake = try await fake()
        let result = await collect(provider(fake).stream(ask("写长一点 #length")))
        #expect(result.error == nil && result.finish == .length)
        await fake.stop()
    }

    @Test func anErrorEventMidStreamIsMappedWithItsCode() async throws {
        let fake = try await fake()
        let result = await collect(provider(fake).stream(ask("不良内容 #error")))
        let error = try #require(result.providerError)
        #expect(error.code == .invalidRequest)
        #expect(error.message.contains("DataInspectionFailed") && error.message.contains("inappropriate content"))
        #expect(error.message.contains("request_id"))
        #expect(!result.text.isEmpty, "the text before the error was streamed")
        #expect(fake.requests.count == 1, "no retry after text")
        await fake.stop()
    }

    @Test func serverErrorsAreRetriedBeforeTheFirstText() async throws {
        let fake = try await fake()
        let result = await collect(provider(fake).stream(ask("#500")))
        #expect(result.providerError?.code == .server(status: 500))
        #expect(result.providerError?.message.contains("InternalError") == true)
        #expect(fake.requests.count == 3, "quickRetry: three attempts")
        await fake.stop()
    }

    @Test func aRateLimitWaitsForRetryAfterThenSucceeds() async throws {
        let fake = try await fake()
        let clock = ContinuousClock()
        let start = clock.now
        let result = await collect(provider(fake).stream(ask("总结 #429-once")))
        #expect(result.error == nil && !result.text.isEmpty)
        #expect(fake.requests.count == 2)
        #expect(clock.now - start >= .seconds(1), "Retry-After: 1 was honoured")
        await fake.stop()
    }

    @Test func aRetryAfterLongerThanTheCapIsThrownAtOnce() async throws {
        let fake = try await fake()
        var retry = quickRetry
        retry.maxRetryAfter = .milliseconds(500)
        let result = await collect(provider(fake, retry: retry).stream(ask("#429")))
        #expect(result.providerError?.code == .rateLimited(retryAfter: 1))
        #expect(result.providerError?.message.contains("Requests rate limit exceeded") == true)
        #expect(fake.requests.count == 1)
        await fake.stop()
    }

    @Test func aTooLongInputIsAContextOverflowWithTheLimit() async throws {
        let fake = try await fake()
        let result = await collect(provider(fake).stream(ask("#overflow")))
        #expect(result.providerError?.code == .contextLengthExceeded(tokens: nil, limit: 30720))
        await fake.stop()
    }

    @Test func aWrongKeyIsUnauthorizedWithoutLeakingIt() async throws {
        let fake = try await fake()
        let wrong = "sk-not-the-right-key-42"
        let result = await collect(provider(fake, key: wrong).stream(ask("你好")))
        let error = try #require(result.providerError)
        #expect(error.code == .unauthorized)
        #expect(error.message.contains("Invalid API-key provided.") && error.message.contains("DASHSCOPE_API_KEY"))
        #expect(!error.description.contains(wrong))
        #expect(fake.requests.count == 1)
        await fake.stop()
    }

    @Test func aStreamCutShortIsANetworkError() async throws {
        let fake = try await fake()
        let result = await collect(provider(fake).stream(ask("一半 #drop")))
        #expect(result.providerError?.code == .network)
        #expect(!result.text.isEmpty)
        await fake.stop()
    }

    @Test func aSilentServerTimesOut() async throws {
        let fake = try await fake()
        let result = await collect(provider(fake, idle: .milliseconds(400)).stream(ask("#silent")))
        #expect(result.providerError?.code == .timeout)
        await fake.stop()
    }

    @Test func aContinuationIsSentAsAPartialAssistantMessage() async throws {
        let fake = try await fake()
        var request = ask("总结一下")
        request.continuation = "一句话：杭州"
        let result = await collect(provider(fake).stream(request))
        #expect(result.error == nil)
        #expect("一句话：杭州" + result.text == Self.summary)
        let messages = try #require((fake.requests.first?.json?["input"] as? [String: Any])?["messages"] as? [[String: Any]])
        #expect(messages.last?["role"] as? String == "assistant" && messages.last?["partial"] as? Bool == true)
        #expect(messages.last?["content"] as? String == "一句话：杭州")
        await fake.stop()
    }

    @Test func missingKeyNamesTheVariableAndTheFile() async throws {
        let dashscope = DashScopeProvider.qwen(credentials: CloudCredentials())
        #expect(await dashscope.availability == .unavailable(.unauthorized))
        let error = try #require(await collect(dashscope.stream(ask("你好"))).providerError)
        #expect(error.code == .unauthorized)
        #expect(error.message.contains("DASHSCOPE_API_KEY") && error.message.contains("~/.config/hearth/providers.json"))
    }

    @Test func presetsAndTheEnvironment() throws {
        let environment = ["DASHSCOPE_API_KEY": Self.key, "DASHSCOPE_HTTP_BASE_URL": "http://127.0.0.1:9/api/v1", "HOME": "/nonexistent"]
        let credentials = try CloudCredentials.load(environment: environment)
        let turbo = DashScopeProvider.qwen(.turbo, credentials: credentials).configuration
        #expect(turbo.model == "qwen-turbo" && turbo.baseURL == "http://127.0.0.1:9/api/v1" && turbo.apiKey == CloudSecret(Self.key))
        #expect(DashScopeProvider.qwen(credentials: CloudCredentials()).configuration.baseURL == DashScopeProvider.defaultBaseURL)
        #expect(DashScopeProvider.qwen("qwen3-235b-a22b", credentials: credentials).configuration.model == "qwen3-235b-a22b")
        #expect(OpenAICompatibleProvider.qwen(credentials: credentials).configuration.apiKey == CloudSecret(Self.key))
    }

    @Test(arguments: [
        ("InvalidApiKey", 401), ("AccessDenied.Unpurchased", 403), ("Model.AccessDenied", 403), ("Arrearage", 403),
        ("Throttling.RateQuota", 429), ("Throttling.AllocationQuota", 429), ("DataInspectionFailed", 400),
        ("InternalError.Algo.InvalidParameter", 400), ("InternalError", 500), ("ResponseTimeout", 408),
        ("ModelNotFound", 404), ("SomethingNew", 500),
    ])
    func errorCodesMapToStatuses(_ code: String, _ status: Int) {
        #expect(DashScopeErrors.status(forCode: code) == status)
    }

    @Test func dialogCodesMapToStatuses() {
        let pairs = [(421, 400), (422, 400), (432, 400), (433, 403), (444, 408), (449, 429), (451, 400), (500, 500)]
        for (code, status) in pairs { #expect(DashScopeErrors.status(forDialogCode: code) == status, "\(code)") }
    }

    @Test func theRouterSendsTranslationsToDashScope() async throws {
        let fake = try await fake()
        let local = RecordingProvider { _ in "local answer" }
        let router = FallbackRouter(providers: [local, provider(fake)], taskRoutes: [.translation: "dashscope"])
        let translated = await collect(router.stream(ChatRequest(messages: [.user("总结一下")], task: .translation)))
        #expect(translated.servedBy == ["dashscope"] && translated.text == Self.summary)
        let chat = await collect(router.stream(ChatRequest(messages: [.user("你好")])))
        #expect(chat.servedBy.first != "dashscope")
        await fake.stop()
    }
}
