import Foundation
import NIOHTTP1
import Synchronization

/// A fake of Alibaba Cloud Bailian's multimodal-dialog WebSocket service
/// (`wss://dashscope.aliyuncs.com/api-ws/v1/inference`), on a loopback socket.
///
/// It follows the published protocol (实时多模态交互协议) and the official `dashscope` SDK:
/// the handshake needs `Authorization: Bearer <key>`; every client frame is checked
/// (`header.action`/`task_id`/`streaming`, the Start payload's task, model, app and workspace,
/// the directive and the state it is allowed in), and a bad one is answered as the service
/// does (`task-failed` InvalidParameter, or a header `status_code` error) and recorded in
/// ``violations``. Answers stream as `RespondingContent` frames whose `text` is the whole answer
/// so far, cut at arbitrary byte offsets (an incomplete last character arrives as U+FFFD and
/// is completed by the next frame), some frames split into WebSocket fragments inside a UTF-8
/// character, with binary "audio" frames in between. Dialogs (their ids and prompts) outlive
/// connections, so a client that reconnects with its `dialog_id` continues its dialog.
///
/// Prompts choose a ``FakeScenario`` by keyword (`#slow`, `#error`, `#silent`, `#drop`,
/// `#close`, `#task-failed`, `#449`).
public final class FakeBailianDialog: Sendable {
    /// How the fake behaves.
    public struct Configuration: Sendable {
        /// The key the handshake must carry.
        public var apiKey: String
        /// The `app_id` Start must name.
        public var appID: String
        /// The `workspace_id` Start must name (`nil`: not checked).
        public var workspaceID: String?
        /// What it answers.
        public var answers: FakeAnswers
        /// The service drops a connection on which it sent nothing for this long (60 s), with
        /// `task-failed` ResponseTimeout; a client's `HeartBeat` is answered, which prevents it.
        public var silenceLimit: Duration
        /// How many bytes each `RespondingContent` adds to the cumulative text.
        public var pieceBytes: ClosedRange<Int>
        /// Pause between answer frames.
        public var pause: Duration
        /// A binary audio frame after every this many text frames (0: none).
        public var audioEvery: Int
        /// When set, Start is answered with `task-failed` carrying this `error_code` and `error_message`.
        public var startFailure: [String]?
        /// Seed of the splits.
        public var seed: UInt64

        /// Creates a configuration.
        public init(
            apiKey: String, appID: String, workspaceID: String? = nil, answers: FakeAnswers = FakeAnswers(),
            silenceLimit: Duration = .seconds(60), pieceBytes: ClosedRange<Int> = 1...9,
            pause: Duration = .milliseconds(3), audioEvery: Int = 2, startFailure: [String]? = nil, seed: UInt64 = 17
        ) {
            self.apiKey = apiKey
            self.appID = appID
            self.workspaceID = workspaceID
            self.answers = answers
            self.silenceLimit = silenceLimit
            self.pieceBytes = pieceBytes
            self.pause = pause
            self.audioEvery = audioEvery
            self.startFailure = startFailure
            self.seed = seed
        }
    }

    /// One directive the fake received.
    public struct Record: Sendable, Equatable, CustomStringConvertible {
        /// Which connection (1-based, in order of handshakes).
        public var connection: Int
        /// The directive (`Start`, `RequestToRespond`, …).
        public var directive: String
        /// The `dialog_id` it carried.
        public var dialogID: String?
        /// The `text` it carried (RequestToRespond).
        public var text: String?

        /// `2:RequestToRespond`.
        public var description: String { "\(connection):\(directive)" }
    }

    struct Shared {
        var records: [Record] = []
        var violations: [String] = []
        var dialogs: [String: [String]] = [:]
        var connections = 0
    }

    /// Its configuration.
    public let configuration: Configuration
    let shared = Mutex(Shared())
    private let server = Mutex<TestWebSocketServer?>(nil)
    private let open = Mutex<[Int: DialogConnection]>([:])

    private init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    /// Starts the fake on `host`:`port` (0: any free port).
    public static func start(_ configuration: Configuration, host: String = "127.0.0.1", port: Int = 0)
        async throws -> FakeBailianDialog
    {
        let fake = FakeBailianDialog(configuration)
        let server = try await TestWebSocketServer.start(host: host, port: port, accept: fake.accept) { peer in
            let number = fake.shared.withLock {
                $0.connections += 1
                return $0.connections
            }
            let connection = DialogConnection(fake: fake, number: number, peer: peer)
            fake.open.withLock { $0[number] = connection }
            await connection.run()
            fake.open.withLock { $0[number] = nil }
        }
        fake.server.withLock { $0 = server }
        return fake
    }

    /// The port it listens on.
    public var port: Int { server.withLock { $0?.port } ?? 0 }
    /// `ws://127.0.0.1:<port>/api-ws/v1/inference`, the value for `DASHSCOPE_WEBSOCKET_BASE_URL`.
    public var url: String { "ws://127.0.0.1:\(port)/api-ws/v1/inference" }
    /// Every directive received, in order.
    public var records: [Record] { shared.withLock { $0.records } }
    /// The directives only, as `connection:directive`, HeartBeats left out.
    public var directives: [String] { records.filter { $0.directive != "HeartBeat" }.map(\.description) }
    /// Frames that broke the protocol, described.
    public var violations: [String] { shared.withLock { $0.violations } }
    /// Handshakes accepted or refused.
    public var handshakes: Int { server.withLock { $0?.handshakeURIs.count } ?? 0 }
    /// The prompts of dialog `id`, in order.
    public func prompts(inDialog id: String) -> [String] { shared.withLock { $0.dialogs[id] ?? [] } }
    /// The ids of the dialogs so far.
    public var dialogIDs: [String] { shared.withLock { Array($0.dialogs.keys) } }

    /// Stops listening, closes the open connections (close code 1001, going away) and waits for them to end.
    public func stop() async {
        let server = server.withLock { $0 }
        let connections = open.withLock { Array($0.values) }
        for connection in connections { await connection.shutdown() }
        await server?.stop()
    }

    func violation(_ text: String) {
        shared.withLock { $0.violations.append(text) }
    }

    /// Refuses a handshake without the path or the key, as the service does (HTTP 401 InvalidApiKey).
    private func accept(_ head: HTTPRequestHead) -> (status: Int, body: String)? {
        let path = head.uri.prefix { $0 != "?" }
        guard path == "/api-ws/v1/inference" else {
            return (404, json(["code": "NotFound", "message": "No route for \(path)", "request_id": requestID()]))
        }
        guard head.headers.first(name: "authorization") == "Bearer \(configuration.apiKey)" else {
            return (401, json(["code": "InvalidApiKey", "message": "Invalid API-key provided.", "request_id": requestID()]))
        }
        return nil
    }
}

/// One client connection of the fake dialog service.
actor DialogConnection {
    let fake: FakeBailianDialog
    let number: Int
    let peer: WebSocketPeer
    var configuration: FakeBailianDialog.Configuration { fake.configuration }
    var taskID: String?
    var dialogID: String?
    var state = "Idle"
    var answer: Task<Void, Never>?
    /// RespondingEnded was sent; LocalRespondingEnded returns to Listening.
    var awaitingPlayback = false
    var lastSent = ContinuousClock.now
    var random: SplitMix64
    let (ended, endSignal) = AsyncStream.makeStream(of: Void.self)

    init(fake: FakeBailianDialog, number: Int, peer: WebSocketPeer) {
        self.fake = fake
        self.number = number
        self.peer = peer
        random = SplitMix64(seed: fake.configuration.seed &+ UInt64(number))
    }

    /// Serves the connection until the client leaves or the fake ends it.
    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.readLoop() }
            group.addTask { await self.silenceWatch() }
            for await _ in ended { break }
            group.cancelAll()
        }
        answer?.cancel()
    }

    /// Closes the connection as a service going away does (close code 1001).
    func shutdown() async {
        answer?.cancel()
        try? await peer.responder.close(code: 1001)
        end()
    }

    private func end() {
        endSignal.yield()
        endSignal.finish()
    }

    private func readLoop() async {
        while let message = try? await peer.receive() {
            switch message {
            case .text(let text): await handle(text)
            case .binary: break  // uploaded audio: no speech recognition in this fake
            case .close:
                try? await peer.responder.close(code: 1000)
                end()
                return
            }
        }
        end()
    }

    private func silenceWatch() async {
        while !Task.isCancelled {
            let deadline = lastSent + configuration.silenceLimit
            if ContinuousClock.now >= deadline {
                await taskFailed("ResponseTimeout", "Response timeout!")
                return
            }
            try? await Task.sleep(until: deadline)
        }
    }

    // MARK: sending

    private func send(_ object: [String: Any], fragmentAt fraction: Double? = nil) async {
        let text = json(object)
        lastSent = .now
        if let fraction {
            try? await peer.responder.fragmentedText(text, at: Int(Double(text.utf8.count) * fraction))
        } else {
            try? await peer.responder.text(text)
        }
    }

    /// A `result-generated` frame with `output` (event, dialog id and fields).
    private func event(_ name: String, _ fields: [String: Any] = [:], fragmentAt fraction: Double? = nil) async {
        var output = fields
        output["event"] = name
        if let dialogID { output["dialog_id"] = dialogID }
        await send(
            ["header": ["event": "result-generated", "task_id": taskID ?? ""], "payload": ["output": output]],
            fragmentAt: fraction)
    }

    private func setState(_ new: String) async {
        state = new
        await event("DialogStateChanged", ["state": new])
    }

    /// `task-failed` with the code in the header, then the connection is closed.
    private func taskFailed(_ code: String, _ message: String) async {
        await send([
            "header": [
                "task_id": taskID ?? "", "event": "task-failed", "error_code": code, "error_message": message,
                "attributes": [String: Any](),
            ],
            "payload": [String: Any](),
        ])
        try? await peer.responder.close(code: 1000)
        end()
    }

    /// A header `status_code` error (the connection is then closed), as for bad parameters.
    private func statusError(_ status: Int, _ name: String, _ message: String) async {
        var output: [String: Any] = ["event": "Error"]
        if let dialogID { output["dialog_id"] = dialogID }
        await send([
            "header": [
                "event": "result-generated", "task_id": taskID ?? "", "status_code": status, "status_name": name,
                "status_message": message,
            ],
            "payload": ["output": output],
        ])
        try? await peer.responder.close(code: 1000)
        end()
    }

    private func refuse(_ problem: String, frame: String) async {
        fake.violation("connection \(number): \(problem) in \(frame.prefix(400))")
        await taskFailed("InvalidParameter", problem)
    }

    // MARK: directives

    private func handle(_ text: String) async {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let header = object["header"] as? [String: Any], let payload = object["payload"] as? [String: Any],
            let input = payload["input"] as? [String: Any], let directive = input["directive"] as? String
        else { return await refuse("not a header/payload.input.directive frame", frame: text) }
        let action = header["action"] as? String
        guard let task = header["task_id"] as? String, !task.isEmpty else {
            return await refuse("header.task_id is missing", frame: text)
        }
        guard header["streaming"] as? String == "duplex" else {
            return await refuse("header.streaming must be \"duplex\"", frame: text)
        }
        let record = FakeBailianDialog.Record(
            connection: number, directive: directive, dialogID: input["dialog_id"] as? String, text: input["text"] as? String)
        fake.shared.withLock { $0.records.append(record) }
        if taskID == nil {
            guard action == "run-task", directive == "Start" else {
                return await refuse("the first frame must be run-task with directive Start", frame: text)
            }
            taskID = task
            return await start(payload: payload, input: input, frame: text)
        }
        guard task == taskID else { return await refuse("header.task_id changed within the connection", frame: text) }
        let expectedAction = directive == "Stop" ? "finish-task" : "continue-task"
        guard action == expectedAction else {
            return await refuse("\(directive) must be sent with action \(expectedAction)", frame: text)
        }
        switch directive {
        case "RequestToRespond":
            await requestToRespond(input: input, frame: text)
        case "RequestToSpeak":
            answer?.cancel()
            await answer?.value
            answer = nil
            awaitingPlayback = false
            await event("RequestAccepted")
            if state != "Listening" { await setState("Listening") }
        case "LocalRespondingStarted":
            break
        case "LocalRespondingEnded":
            if awaitingPlayback {
                awaitingPlayback = false
                await setState("Listening")
            }
        case "HeartBeat":
            await event("HeartBeat")
        case "UpdateInfo", "SendSpeech":
            break
        case "StopSpeech":
            await event(
                "Error",
                ["error_code": 451, "error_name": "NoSpeechRecognized", "error_message": "No speech recognized from audio!"])
        case "CancelSpeech":
            await setState("Listening")
        case "Stop":
            answer?.cancel()
            await event("Stopped")
            try? await peer.responder.close(code: 1000)
            end()
        default:
            fake.violation("connection \(number): unknown directive \(directive)")
            await statusError(422, "DirectiveNotSupported", "Directive not supported: \(directive)")
        }
    }

    private func start(payload: [String: Any], input: [String: Any], frame: String) async {
        let parameters = payload["parameters"] as? [String: Any]
        let upstream = parameters?["upstream"] as? [String: Any]
        let userID = (parameters?["client_info"] as? [String: Any])?["user_id"] as? String
        let problems: [(Bool, String)] = [
            (payload["task_group"] as? String == "aigc", "payload.task_group must be \"aigc\""),
            (payload["task"] as? String == "multimodal-generation", "payload.task must be \"multimodal-generation\""),
            (payload["function"] as? String == "generation", "payload.function must be \"generation\""),
            (payload["model"] as? String == "multimodal-dialog", "payload.model must be \"multimodal-dialog\""),
            (input["app_id"] as? String == configuration.appID, "input.app_id is not this app"),
            (configuration.workspaceID == nil || input["workspace_id"] as? String == configuration.workspaceID,
                "input.workspace_id is not this workspace"),
            (upstream?["type"] as? String == "AudioOnly", "parameters.upstream.type must be \"AudioOnly\""),
            (["push2talk", "tap2talk", "duplex"].contains(upstream?["mode"] as? String ?? "tap2talk"),
                "parameters.upstream.mode must be push2talk, tap2talk or duplex"),
            (userID.map { !$0.isEmpty && $0.count <= 36 } ?? false, "parameters.client_info.user_id must have 1 to 36 characters"),
        ]
        if let problem = problems.first(where: { !$0.0 }) { return await refuse(problem.1, frame: frame) }
        if let failure = configuration.startFailure, failure.count == 2 {
            return await taskFailed(failure[0], failure[1])
        }
        let id = (input["dialog_id"] as? String).flatMap { $0.isEmpty ? nil : $0 } ?? requestID()
        dialogID = id
        fake.shared.withLock { if $0.dialogs[id] == nil { $0.dialogs[id] = [] } }
        await event("Started")
        await setState("Listening")
    }

    private func requestToRespond(input: [String: Any], frame: String) async {
        guard let type = input["type"] as? String, ["prompt", "transcript"].contains(type) else {
            fake.violation("connection \(number): RequestToRespond type \(String(describing: input["type"]))")
            return await statusError(
                421, "InvalidParameter", "type of directive payload is error, please choose transcript or prompt")
        }
        guard let text = input["text"] as? String else { return await refuse("RequestToRespond needs input.text", frame: frame) }
        guard input["dialog_id"] as? String == dialogID else {
            return await refuse("RequestToRespond must carry this dialog's dialog_id", frame: frame)
        }
        guard state == "Listening", answer == nil else {
            fake.violation("connection \(number): RequestToRespond in state \(state)")
            return await statusError(421, "InvalidParameter", "RequestToRespond is only accepted in the Listening state")
        }
        guard let dialogID else { return }
        let round = fake.shared.withLock {
            $0.dialogs[dialogID, default: []].append(text)
            return $0.dialogs[dialogID, default: []].count
        }
        let reply = type == "transcript" ? text : configuration.answers.answer(to: text, round: round)
        let scenario = type == "transcript" ? .normal : FakeScenario.of(text)
        answer = Task { await self.respond(reply, scenario: scenario) }
    }

    // MARK: answers

    /// Streams `reply` as the service does; stops quietly when cancelled (RequestToSpeak).
    private func respond(_ reply: String, scenario: FakeScenario) async {
        let roundID = requestID()
        let llmRequestID = requestID()
        func pause(_ scale: Int = 1) async -> Bool {
            try? await Task.sleep(for: configuration.pause * scale)
            return !Task.isCancelled
        }
        await setState("Thinking")
        if scenario == .silent { return }
        guard await pause(3) else { return }
        if scenario == .tooManyInterrupts {
            return await statusError(
                449, "TooManyInterrupt", "Send too many RequestToRespond or RequestToSpeak directives in a short time!")
        }
        await setState("Responding")
        await event("RespondingStarted")
        let bytes = Array(reply.utf8)
        var cuts = byteCuts(reply, sizes: configuration.pieceBytes, using: &random)
        let failing: Set<FakeScenario> = [.errorMidAnswer, .drop, .closeFrame, .taskFailed]
        if failing.contains(scenario) { cuts = Array(cuts.prefix(max(1, cuts.count / 3))) }
        for (index, cut) in cuts.enumerated() {
            guard await pause(scenario == .slow ? 25 : 1) else { return }
            let text = String(decoding: bytes[..<cut], as: UTF8.self)
            let finished = cut == bytes.count
            let fields: [String: Any] = [
                "text": text, "spoken": text, "finished": finished, "round_id": roundID, "llm_request_id": llmRequestID,
            ]
            // Every third frame arrives as two WebSocket fragments, cut inside the JSON text.
            await event("RespondingContent", fields, fragmentAt: index % 3 == 1 ? 0.8 : nil)
            if configuration.audioEvery > 0, index % configuration.audioEvery == 0 {
                lastSent = .now
                try? await peer.responder.binary(Array(repeating: UInt8(index & 0xFF), count: 640))
            }
        }
        switch scenario {
        case .errorMidAnswer:
            await event(
                "Error",
                [
                    "error_code": 500, "error_name": "InternalLLMError", "error_message": "Internal LLM error",
                    "round_id": roundID, "llm_request_id": llmRequestID,
                ])
            answer = nil
            await setState("Listening")
            return
        case .drop:
            end()  // the session returns and the socket closes, with no close frame
            return
        case .closeFrame:
            try? await peer.responder.close(code: 1011)
            end()
            return
        case .taskFailed:
            return await taskFailed("InternalError", "Internal server error, please retry later.")
        default:
            break
        }
        for _ in 0..<2 where configuration.audioEvery > 0 {
            guard await pause() else { return }
            lastSent = .now
            try? await peer.responder.binary(Array(repeating: 0, count: 640))
        }
        guard !Task.isCancelled else { return }
        awaitingPlayback = true
        answer = nil
        await event("RespondingEnded")
    }
}
