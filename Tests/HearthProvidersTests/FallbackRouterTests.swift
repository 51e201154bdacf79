import HearthProviders
import Synchronization
import Testing

/// The router's order, failover rules and mid-stream continuation, with scripted providers.
@Suite struct FallbackRouterTests {
    let question = ChatRequest(messages: [.system("Be brief."), .user("Capital of France?")])

    @Test func firstProviderServesAndIsAnnouncedFirst() async {
        let cloud = ScriptedProvider("cloud", answers: "Paris.")
        let local = ScriptedProvider("local", answers: "unused")
        let result = await collect(FallbackRouter(providers: [cloud, local]).stream(question))
        #expect(result.error == nil)
        #expect(result.trace == ["served:cloud", "text:Paris.", "finish:stop"])
        #expect(local.askedCount == 0)
        #expect(cloud.lastRequest?.continuation == nil)
    }

    @Test func dialogStatesPassThroughAndCompleteIgnoresThem() async throws {
        let dialog = ScriptedProvider("bailian") { _ in
            [.state(.thinking), .state(.responding), .text("巴黎"), .text("。"), .finish(.stop), .state(.listening)]
        }
        let result = await collect(FallbackRouter(providers: [dialog]).stream(question))
        #expect(result.error == nil)
        #expect(
            result.trace == [
                "served:bailian", "state:Thinking", "state:Responding", "text:巴黎", "text:。", "finish:stop",
                "state:Listening",
            ])
        let response = try await FallbackRouter(providers: [dialog]).complete(question)
        #expect(response.text == "巴黎。" && response.finishReason == .stop && response.provider == "bailian")
        #expect(DialogState(rawValue: "Listening") == .listening && DialogState.thinking.description == "Thinking")
    }

    @Test func networkErrorBeforeAnyTextFailsOver() async {
        let cloud = ScriptedProvider("cloud") { _ in [.fail(failure(.network, "cloud"))] }
        let local = ScriptedProvider("local", answers: "Paris.")
        let result = await collect(FallbackRouter(providers: [cloud, local]).stream(question))
        #expect(result.error == nil)
        #expect(result.trace == ["served:cloud", "switch:cloud>local", "served:local", "text:Paris.", "finish:stop"])
        #expect(result.switches.first?.reason.code == .network)
        #expect(local.lastRequest?.continuation == nil)
        #expect(local.lastRequest?.messages == question.messages)
    }

    @Test(arguments: [
        ProviderError.Code.network, .timeout, .server(status: 500), .server(status: 529),
        .rateLimited(retryAfter: 30), .modelUnavailable, .decoding,
    ])
    func defaultRuleFailsOverOn(_ code: ProviderError.Code) async {
        let cloud = ScriptedProvider("cloud") { _ in [.fail(failure(code, "cloud"))] }
        let local = ScriptedProvider("local", answers: "ok")
        let result = await collect(FallbackRouter(providers: [cloud, local]).stream(question))
        #expect(result.text == "ok")
        #expect(result.switches.map(\.reason.code) == [code])
    }

    @Test(arguments: [
        ProviderError.Code.unauthorized, .invalidRequest, .contextLengthExceeded(tokens: 9000, limit: 8192),
        .server(status: 400),
    ])
    func defaultRuleThrowsWithoutFailoverOn(_ code: ProviderError.Code) async {
        let cloud = ScriptedProvider("cloud") { _ in [.fail(failure(code, "cloud"))] }
        let local = ScriptedProvider("local", answers: "unused")
        let result = await collect(FallbackRouter(providers: [cloud, local]).stream(question))
        #expect(result.providerError?.code == code)
        #expect(result.providerError?.provider == "cloud")
        #expect(local.askedCount == 0)
    }

    @Test func customRuleCanFailOverOnAnything() async {
        let cloud = ScriptedProvider("cloud") { _ in [.fail(failure(.unauthorized, "cloud"))] }
        let local = ScriptedProvider("local", answers: "ok")
        let router = FallbackRouter(providers: [cloud, local], shouldFailOver: { _ in true })
        let result = await collect(router.stream(question))
        #expect(result.text == "ok")
    }

    @Test func midStreamFailureContinuesTheSameAnswer() async {
        let cloud = ScriptedProvider("cloud") { _ in
            [.text("The capital"), .text(" of France"), .fail(failure(.network, "cloud"))]
        }
        let local = ScriptedProvider("local") { request in
            // The local model continues exactly after what the consumer already has.
            request.continuation == "The capital of France" ? [.text(" is Paris."), .finish(.stop)] : [.text("WRONG")]
        }
        let result = await collect(FallbackRouter(providers: [cloud, local]).stream(question))
        #expect(result.error == nil)
        #expect(result.text == "The capital of France is Paris.")
        #expect(
            result.trace == [
                "served:cloud", "text:The capital", "text: of France", "switch:cloud>local", "served:local",
                "text: is Paris.", "finish:stop",
            ])
        #expect(local.lastRequest?.messages == question.messages)
    }

    @Test func continuationAccumulatesOverTwoFailures() async {
        let a = ScriptedProvider("a") { _ in [.text("One,"), .fail(failure(.timeout, "a"))] }
        let b = ScriptedProvider("b") { _ in [.text(" two,"), .fail(failure(.server(status: 502), "b"))] }
        let c = ScriptedProvider("c") { request in [.text(" three [\(request.continuation ?? "nil")]"), .finish(.stop)] }
        let result = await collect(FallbackRouter(providers: [a, b, c]).stream(question))
        #expect(result.text == "One, two, three [One, two,]")
        #expect(result.switches.map { "\($0.from)>\($0.to)" } == ["a>b", "b>c"])
        #expect(b.lastRequest?.continuation == "One,")
    }

    @Test func existingContinuationIsExtended() async {
        let a = ScriptedProvider("a") { _ in [.text(" two"), .fail(failure(.network, "a"))] }
        let b = ScriptedProvider("b") { _ in [.finish(.stop)] }
        var request = question
        request.continuation = "One,"
        _ = await collect(FallbackRouter(providers: [a, b]).stream(request))
        #expect(a.lastRequest?.continuation == "One,")
        #expect(b.lastRequest?.continuation == "One, two")
    }

    @Test func lastProvidersFailureIsThrown() async {
        let a = ScriptedProvider("a") { _ in [.fail(failure(.network, "a"))] }
        let b = ScriptedProvider("b") { _ in [.text("half"), .fail(failure(.timeout, "b"))] }
        let result = await collect(FallbackRouter(providers: [a, b]).stream(question))
        #expect(result.text == "half")
        #expect(result.providerError?.code == .timeout)
        #expect(result.providerError?.provider == "b")
    }

    @Test func localFirstTriesTheListInReverse() async {
        let cloud = ScriptedProvider("cloud", answers: "cloud")
        let local = ScriptedProvider("local") { _ in [.fail(failure(.modelUnavailable, "local"))] }
        let router = FallbackRouter(providers: [cloud, local], policy: .localFirst)
        #expect(router.order(for: question).map(\.id) == ["local", "cloud"])
        let result = await collect(router.stream(question))
        #expect(result.trace.prefix(3) == ["served:local", "switch:local>cloud", "served:cloud"])
        #expect(result.text == "cloud")
    }

    @Test func taskRoutesPutTheirProviderFirst() async {
        let general = ScriptedProvider("general", answers: "general")
        let coder = ScriptedProvider("coder", answers: "func f() {}")
        let translator = ScriptedProvider("translator", answers: "你好")
        let router = FallbackRouter(
            providers: [general, coder, translator],
            taskRoutes: [.codeGeneration: "coder", .translation: "translator", .summarization: "missing"])
        var request = question
        request.task = .codeGeneration
        #expect(router.order(for: request).map(\.id) == ["coder", "general", "translator"])
        #expect(await collect(router.stream(request)).text == "func f() {}")
        request.task = .translation
        #expect(await collect(router.stream(request)).text == "你好")
        request.task = .summarization  // unknown id: the policy's order
        #expect(router.order(for: request).map(\.id) == ["general", "coder", "translator"])
        request.task = nil
        #expect(await collect(router.stream(request)).text == "general")
    }

    @Test func unavailableProvidersAreSkipped() async {
        let cloud = ScriptedProvider("cloud", answers: "unused", availability: .unavailable(.unauthorized))
        let local = ScriptedProvider("local", answers: "offline answer")
        let router = FallbackRouter(providers: [cloud, local])
        let result = await collect(router.stream(question))
        #expect(result.trace == ["served:local", "text:offline", "text: answer", "finish:stop"])
        #expect(cloud.askedCount == 0)
        #expect(await router.availability == .available)
    }

    @Test func noAvailableProviderIsModelUnavailableWithReasons() async throws {
        let cloud = ScriptedProvider("cloud", answers: "x", availability: .unavailable(.offline))
        let local = ScriptedProvider("local", answers: "x", availability: .unavailable(.notDownloaded))
        let router = FallbackRouter(id: "main", providers: [cloud, local])
        let result = await collect(router.stream(question))
        let error = try #require(result.providerError)
        #expect(error.code == .modelUnavailable)
        #expect(error.provider == "main")
        #expect(error.message.contains("cloud: offline"))
        #expect(error.message.contains("local: model not downloaded"))
        #expect(await router.availability == .unavailable(.offline))
    }

    @Test func failoverSkipsAProviderThatBecameUnavailable() async {
        let a = ScriptedProvider("a") { _ in [.fail(failure(.network, "a"))] }
        let b = ScriptedProvider("b", answers: "x", availability: .unavailable(.loading))
        let c = ScriptedProvider("c", answers: "from c")
        let result = await collect(FallbackRouter(providers: [a, b, c]).stream(question))
        #expect(result.switches.map { "\($0.from)>\($0.to)" } == ["a>c"])
        #expect(result.text == "from c")
    }

    @Test func foreignErrorsAreWrappedAndFailOver() async {
        let a = ScriptedProvider("a") { _ in [.failForeign] }
        let b = ScriptedProvider("b", answers: "ok")
        let result = await collect(FallbackRouter(providers: [a, b]).stream(question))
        #expect(result.switches.first?.reason.code == .modelUnavailable)
        #expect(result.switches.first?.reason.underlying is CocoaLikeError)
        #expect(result.text == "ok")
    }

    @Test func errorAfterFinishIsIgnored() async {
        let a = ScriptedProvider("a") { _ in [.text("done"), .finish(.length), .fail(failure(.network, "a"))] }
        let b = ScriptedProvider("b", answers: "unused")
        let result = await collect(FallbackRouter(providers: [a, b]).stream(question))
        #expect(result.error == nil)
        #expect(result.finish == .length)
        #expect(b.askedCount == 0)
    }

    @Test func completeReportsTheProviderThatFinished() async throws {
        let a = ScriptedProvider("a") { _ in [.text("Hello"), .fail(failure(.network, "a"))] }
        let usage = Usage(promptTokens: 7, completionTokens: 3, timeToFirstToken: 0.1, tokensPerSecond: 20)
        let b = ScriptedProvider("b") { _ in [.text(", world"), .usage(usage), .finish(.stop)] }
        let response = try await FallbackRouter(providers: [a, b]).complete(question)
        #expect(response.text == "Hello, world")
        #expect(response.provider == "b")
        #expect(response.usage == usage)
        #expect(response.finishReason == .stop)
    }

    @Test func droppingTheStreamCancelsTheServingProvider() async throws {
        let a = ScriptedProvider("a") { _ in [.text("first"), .hang] }
        let router = FallbackRouter(providers: [a])
        let clock = ContinuousClock()
        let start = clock.now
        do {
            for try await event in router.stream(question) {
                if case .textDelta = event { break }  // the consumer leaves after the first text
            }
        }
        // The provider's stream is terminated promptly, long before its 10 s hang ends.
        var waited = 0
        while a.terminations.withLock({ $0 }) == 0 && waited < 900 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        #expect(a.terminations.withLock { $0 } == 1)
        #expect(clock.now - start < .milliseconds(9500), "before the provider's 10 s hang would end")
    }

    @Test func cancellingTheConsumerTaskEndsTheStream() async throws {
        let a = ScriptedProvider("a") { _ in [.text("first"), .hang] }
        let b = ScriptedProvider("b", answers: "must not be asked")
        let router = FallbackRouter(providers: [a, b])
        let received = Mutex<String>("")
        let consumer = Task {
            let result = await collect(router.stream(question)) { event in
                if case .textDelta(let text) = event { received.withLock { $0 += text } }
            }
            return result
        }
        var waited = 0
        while received.withLock({ $0.isEmpty }) && waited < 500 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        consumer.cancel()
        let result = await consumer.value
        #expect(result.text == "first")
        // A cancelled consumer's stream simply ends (AsyncThrowingStream returns nil).
        #expect(b.askedCount == 0, "cancellation is not a reason to fail over")
    }

    @Test func prewarmWarmsEveryProviderAndToleratesSomeFailures() async throws {
        let cloud = ScriptedProvider("cloud", answers: "x")
        let local = ScriptedProvider("local", prewarmError: failure(.insufficientMemoryStandIn, "local")) { _ in [] }
        try await FallbackRouter(providers: [cloud, local]).prewarm(question)
        #expect(cloud.prewarmed.withLock { $0 } == 1)
        #expect(local.prewarmed.withLock { $0 } == 1)
        await #expect(throws: ProviderError.self) {
            try await FallbackRouter(providers: [local]).prewarm(nil)
        }
    }
}

extension ProviderError.Code {
    static let insufficientMemoryStandIn = ProviderError.Code.modelUnavailable
}
