import Foundation
import HearthFakeServers
import HearthProviders
import Synchronization
import Testing

@testable import HearthCloud

/// BailianDialogProvider against the fake dialog service on a loopback socket: cumulative
/// answers cut at arbitrary UTF-8 boundaries with audio frames in between, turns on one
/// connection, interruption, heartbeats, reconnection with the dialog id, and every kind of error.
@Suite struct BailianDialogProviderTests {
    static let key = "sk-bailian-test-key-0123456789"
    static let app = "app-7f3c"
    static let workspace = "llm-ws-42"
    static let hangzhou = "杭州是浙江省的省会，西湖🌊闻名天下。春天的苏堤，桃红柳绿；Café 与茶馆并存。"

    func fake(_ edit: (inout FakeBailianDialog.Configuration) -> Void = { _ in }) async throws -> FakeBailianDialog {
        var configuration = FakeBailianDialog.Configuration(
            apiKey: Self.key, appID: Self.app, workspaceID: Self.workspace,
            answers: FakeAnswers(["介绍一下杭州": Self.hangzhou]), pieceBytes: 1...5)
        edit(&configuration)
        return try await FakeBailianDialog.start(configuration)
    }

    func provider(
        _ fake: FakeBailianDialog, key: String = key, idle: Duration = .seconds(3), heartbeat: Duration = .seconds(50),
        retry: RetryPolicy = .none
    ) -> BailianDialogProvider {
        BailianDialogProvider(
            .init(
                url: fake.url, apiKey: CloudSecret(key), appID: Self.app, workspaceID: Self.workspace,
                userID: "tester", heartbeatInterval: heartbeat, recoveryTimeout: .seconds(2),
                timeouts: CloudTimeouts(connect: .seconds(2), idle: idle), retry: retry))
    }

    func ask(_ text: String) -> ChatRequest { ChatRequest(messages: [.system("ignored"), .user(text)]) }

    /// Waits (at most 5 s) until `condition` holds.
    func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Streams until `count` deltas arrived, then cancels the consuming task (as Ctrl-C does).
    func interrupted(_ stream: AsyncThrowingStream<ChatEvent, Error>, after count: Int) async -> Collected {
        let box = CollectedBox()
        let task = Task {
            do {
                for try await event in stream { box.value.withLock { $0.events.append(event) } }
            } catch {
                box.value.withLock { $0.error = error }
            }
        }
        _ = await eventually { box.value.withLock { $0.deltas.count >= count } }
        task.cancel()
        await task.value
        return box.value.withLock { $0 }
    }

    @Test func streamsTheCumulativeAnswerAsExactDeltas() async throws {
        let fake = try await fake()
        let result = await collect(provider(fake).stream(ask("介绍一下杭州")))
        #expect(result.error == nil)
        #expect(result.text == Self.hangzhou)
        #expect(result.deltas.count > 10, "the answer streamed in many pieces")
        #expect(!result.deltas.contains { $0.contains("\u{FFFD}") }, "an incomplete character never shows")
        #expect(result.finish == .stop)
        #expect(result.servedBy == ["bailian"])
        let states = result.events.compactMap { if case .dialogState(let state) = $0 { state } else { nil } }
        #expect(states == [.listening, .thinking, .responding])
        #expect(await eventually { fake.directives.count == 4 })
        #expect(fake.directives == ["1:Start", "1:RequestToRespond", "1:LocalRespondingStarted", "1:LocalRespondingEnded"])
        let start = try #require(fake.records.first)
        #expect(start.dialogID == nil, "a new dialog")
        let dialog = try #require(fake.dialogIDs.first)
        #expect(fake.records[1].dialogID == dialog && fake.records[1].text == "介绍一下杭州")
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        await fake.stop()
    }

    @Test func turnsShareOneConnectionAndOneDialog() async throws {
        let fake = try await fake()
        let bailian = provider(fake)
        let first = await collect(bailian.stream(ask("第一个问题")))
        let second = await collect(bailian.stream(ask("第二个问题")))
        #expect(first.error == nil && second.error == nil)
        #expect(first.text.contains("第1轮") && second.text.contains("第2轮"), "\(second.text)")
        #expect(fake.handshakes == 1)
        let dialog = try #require(await bailian.dialogID)
        #expect(fake.prompts(inDialog: dialog) == ["第一个问题", "第二个问题"])
        #expect(Array(fake.directives.prefix(5)) == [
            "1:Start", "1:RequestToRespond", "1:LocalRespondingStarted", "1:LocalRespondingEnded", "1:RequestToRespond",
        ])
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        await fake.stop()
    }

    @Test func cancellingSendsRequestToSpeakAndTheNextTurnWorks() async throws {
        let fake = try await fake()
        let bailian = provider(fake)
        let cut = await interrupted(bailian.stream(ask("讲个长故事 #slow")), after: 3)
        #expect(cut.deltas.count >= 3)
        #expect(cut.finish == nil, "the interrupted answer did not finish")
        #expect(await eventually { fake.directives.contains("1:RequestToSpeak") })
        let next = await collect(bailian.stream(ask("继续聊")))
        #expect(next.error == nil)
        #expect(next.text.contains("第2轮"), "the dialog goes on after the interruption: \(next.text)")
        #expect(fake.handshakes == 1, "the same connection")
        let speak = try #require(fake.directives.firstIndex(of: "1:RequestToSpeak"))
        let secondRequest = try #require(fake.directives.lastIndex(of: "1:RequestToRespond"))
        #expect(speak < secondRequest, "\(fake.directives)")
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        await fake.stop()
    }

    @Test func aDroppedConnectionIsANetworkErrorAndTheDialogReconnects() async throws {
        let fake = try await fake()
        let bailian = provider(fake, retry: quickRetry)
        let dropped = await collect(bailian.stream(ask("说一半 #drop")))
        #expect(dropped.providerError?.code == .network)
        #expect(!dropped.text.isEmpty && dropped.finish == nil, "part of the answer came, then the drop")
        let dialog = try #require(await bailian.dialogID)
        let next = await collect(bailian.stream(ask("你还在吗")))
        #expect(next.error == nil)
        #expect(next.text.contains("第2轮"), "\(next.text)")
        #expect(fake.handshakes == 2)
        let restart = try #require(fake.records.last { $0.directive == "Start" })
        #expect(restart.connection == 2 && restart.dialogID == dialog, "the new connection continues the dialog")
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        await fake.stop()
    }

    @Test func heartbeatsKeepAnIdleConnectionOpen() async throws {
        let fake = try await fake { $0.silenceLimit = .milliseconds(600) }
        let bailian = provider(fake, heartbeat: .milliseconds(150))
        #expect(await collect(bailian.stream(ask("一"))).error == nil)
        try await Task.sleep(for: .milliseconds(1500))
        let second = await collect(bailian.stream(ask("二")))
        #expect(second.error == nil && second.text.contains("第2轮"))
        #expect(fake.handshakes == 1, "heartbeats kept the connection")
        #expect(fake.records.filter { $0.directive == "HeartBeat" }.count >= 3)
        await fake.stop()
    }

    @Test func withoutHeartbeatsTheServiceDropsTheConnectionAndTheDialogContinues() async throws {
        let fake = try await fake { $0.silenceLimit = .milliseconds(400) }
        let bailian = provider(fake, heartbeat: .seconds(60))
        #expect(await collect(bailian.stream(ask("一"))).error == nil)
        try await Task.sleep(for: .milliseconds(1000))  // the fake sends task-failed ResponseTimeout and closes
        let second = await collect(bailian.stream(ask("二")))
        #expect(second.error == nil)
        #expect(second.text.contains("第2轮"), "\(second.text)")
        #expect(fake.handshakes == 2)
        await fake.stop()
    }

    @Test(arguments: [
        ("出错 #error", ProviderError.Code.server(status: 500), "InternalLLMError"),
        ("失败 #task-failed", .server(status: 500), "InternalError"),
        ("关闭 #close", .server(status: 500), "1011"),
        ("太多 #449", .rateLimited(retryAfter: nil), "TooManyInterrupt"),
    ])
    func serviceErrorsAreMapped(_ prompt: String, _ code: ProviderError.Code, _ said: String) async throws {
        let fake = try await fake()
        let bailian = provider(fake)
        let result = await collect(bailian.stream(ask(prompt)))
        let error = try #require(result.providerError)
        #expect(error.code == code)
        #expect(error.message.contains(said), "\(error.message)")
        #expect(error.provider == "bailian")
        let next = await collect(bailian.stream(ask("再试一次")))
        #expect(next.error == nil && next.text.contains("第2轮"), "the dialog survives: \(next.text)")
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        await fake.stop()
    }

    @Test func aServiceErrorMidAnswerKeepsTheMessageAndTheText() async throws {
        let fake = try await fake()
        let result = await collect(provider(fake).stream(ask("出错 #error")))
        #expect(!result.text.isEmpty)
        #expect(result.providerError?.message.contains("Internal LLM error") == true)
        #expect(result.providerError?.message.contains("dialog_id") == true, "the dialog id helps support")
        await fake.stop()
    }

    @Test func taskFailedAtStartIsUnauthorizedAndNotRetried() async throws {
        let fake = try await fake {
            $0.startFailure = ["AccessDenied.Unpurchased", "Access to model denied. Please make sure you are eligible for using the model."]
        }
        let result = await collect(provider(fake, retry: quickRetry).stream(ask("你好")))
        let error = try #require(result.providerError)
        #expect(error.code == .unauthorized)
        #expect(error.message.contains("AccessDenied.Unpurchased") && error.message.contains("eligible"))
        #expect(error.message.contains("BAILIAN_APP_ID"))
        #expect(fake.handshakes == 1)
        await fake.stop()
    }

    @Test func aWrongKeyIsRefusedAtTheHandshakeWithoutLeakingIt() async throws {
        let fake = try await fake()
        let wrong = "sk-wrong-key-abcdef123456"
        let result = await collect(provider(fake, key: wrong, retry: quickRetry).stream(ask("你好")))
        let error = try #require(result.providerError)
        #expect(error.code == .unauthorized)
        #expect(error.message.contains("Invalid API-key provided."))
        #expect(error.message.contains("DASHSCOPE_API_KEY") && error.message.contains("providers.json"))
        #expect(fake.handshakes == 1, "unauthorized is not retried")
        for text in [error.description, String(describing: error.underlying)] { #expect(!text.contains(wrong)) }
        await fake.stop()
    }

    @Test func aSilentServiceTimesOutAndTheDialogRecovers() async throws {
        let fake = try await fake()
        let bailian = provider(fake, idle: .milliseconds(400))
        let clock = ContinuousClock()
        let start = clock.now
        let result = await collect(bailian.stream(ask("不回答 #silent")))
        #expect(result.providerError?.code == .timeout)
        #expect(clock.now - start < .seconds(5))
        let next = await collect(bailian.stream(ask("现在呢")))
        #expect(next.error == nil && next.text.contains("第2轮"), "\(next.text)")
        #expect(fake.directives.contains("1:RequestToSpeak"), "the silent answer was interrupted")
        await fake.stop()
    }

    @Test func anUnreachableServiceIsANetworkError() async throws {
        let port = try await closedPort()
        let bailian = BailianDialogProvider(
            .init(
                url: "ws://127.0.0.1:\(port)/api-ws/v1/inference", apiKey: CloudSecret(Self.key), appID: Self.app,
                timeouts: testTimeouts, retry: .none))
        #expect(await collect(bailian.stream(ask("你好"))).providerError?.code == .network)
    }

    @Test func missingCredentialsNameTheVariablesAndTheFile() async throws {
        let bailian = BailianDialogProvider.fromCredentials(CloudCredentials())
        #expect(await bailian.availability == .unavailable(.unauthorized))
        let error = try #require(await collect(bailian.stream(ask("你好"))).providerError)
        #expect(error.code == .unauthorized)
        for name in ["DASHSCOPE_API_KEY", "BAILIAN_APP_ID", "BAILIAN_WORKSPACE_ID", "~/.config/hearth/providers.json"] {
            #expect(error.message.contains(name), "\(name) in \(error.message)")
        }
    }

    @Test func credentialsComeFromTheEnvironmentOrTheBailianEntry() throws {
        let environment = [
            "DASHSCOPE_API_KEY": Self.key, "BAILIAN_APP_ID": Self.app, "BAILIAN_WORKSPACE_ID": Self.workspace,
            "DASHSCOPE_WEBSOCKET_BASE_URL": "ws://127.0.0.1:1/api-ws/v1/inference", "HOME": "/nonexistent",
        ]
        let fromEnvironment = BailianDialogProvider.fromCredentials(try CloudCredentials.load(environment: environment)).configuration
        #expect(fromEnvironment.apiKey == CloudSecret(Self.key) && fromEnvironment.appID == Self.app)
        #expect(fromEnvironment.workspaceID == Self.workspace && fromEnvironment.url == "ws://127.0.0.1:1/api-ws/v1/inference")

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bailian-\(UUID().uuidString).json")
        try Data(#"{"bailian": {"apiKey": "sk-file-key-123456", "appID": "a1", "workspaceID": "w1"}}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let credentials = try CloudCredentials.load(environment: [:], file: file)
        let fromFile = BailianDialogProvider.fromCredentials(credentials).configuration
        #expect(fromFile.apiKey == CloudSecret("sk-file-key-123456") && fromFile.appID == "a1" && fromFile.workspaceID == "w1")
        #expect(fromFile.url == BailianDialogProvider.defaultURL)
        #expect(DashScopeProvider.qwen(credentials: credentials).configuration.apiKey == CloudSecret("sk-file-key-123456"))
    }

    @Test func theRouterFinishesABrokenDialogAnswerLocally() async throws {
        let fake = try await fake()
        let local = RecordingProvider { request in "【本地续写】" + (request.continuation.map { "接着「\($0.suffix(2))」" } ?? "") }
        let router = FallbackRouter(providers: [provider(fake), local], taskRoutes: [.translation: "bailian"])
        let result = await collect(router.stream(ChatRequest(messages: [.user("翻译 #drop")], task: .translation)))
        #expect(result.error == nil)
        #expect(result.switches.map { "\($0.from)>\($0.to)" } == ["bailian>local"])
        let partial = try #require(local.lastRequest?.continuation)
        #expect(!partial.isEmpty && result.text.hasPrefix(partial) && result.text.hasSuffix("」"))
        await fake.stop()
    }
}

/// The cumulative-text rule on its own.
@Suite struct CumulativeTextTests {
    @Test func deltasAreWhatEachTextAdds() {
        var text = CumulativeText()
        #expect(text.delta(for: "你", final: false) == "你")
        #expect(text.delta(for: "你\u{FFFD}", final: false) == "", "an incomplete character waits")
        #expect(text.delta(for: "你好🙂", final: false) == "好🙂")
        #expect(text.delta(for: "你坏", final: false) == "", "a revision adds nothing")
        #expect(text.delta(for: "你好🙂！", final: true) == "！")
        #expect(text.shown == "你好🙂！")
    }

    @Test func aTrailingReplacementCharacterOfTheFinalTextIsKept() {
        var text = CumulativeText()
        #expect(text.delta(for: "a\u{FFFD}", final: false) == "a")
        #expect(text.delta(for: "a\u{FFFD}", final: true) == "\u{FFFD}")
    }

    @Test func aContinuationIsNotRepeated() {
        var same = CumulativeText(continuation: "杭州是")
        #expect(same.delta(for: "杭", final: false) == "")
        #expect(same.delta(for: "杭州是浙江", final: false) == "浙江")
        var other = CumulativeText(continuation: "杭州是")
        #expect(other.delta(for: "西湖", final: false) == "西湖", "a different answer is shown in full")
    }
}
