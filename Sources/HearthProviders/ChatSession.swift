import Foundation
import Synchronization

/// A conversation with any model — the on-device ``LanguageModelProvider`` of HearthLocal, a
/// cloud provider, or a ``FallbackRouter`` over both: it keeps the transcript, sends each prompt
/// with the conversation so far, runs the tools the model calls, and can be saved and restored.
///
/// ```swift
/// let session = ChatSession(provider: model, instructions: "Answer in one sentence.", tools: [Weather()])
/// for try await update in session.streamResponse(to: "Weather in Paris?") {
///     if case .textDelta(let text) = update { print(text, terminator: "") }
/// }
/// let saved = try await session.savedState()          // the transcript, and a local model's KV cache
/// let again = await ChatSession.restore(saved, provider: model, tools: [Weather()])
/// ```
///
/// One prompt at a time: a second ``respond(to:options:)`` or ``streamResponse(to:options:)``
/// while one is running throws ``ProviderError`` (`.invalidRequest`). A turn is added to the
/// ``transcript`` only when it completes: a failed or cancelled turn leaves it as it was.
///
/// Named `ChatSession` (not `LanguageModelSession`) so that it lives beside FoundationModels'
/// session in one file.
public final class ChatSession: Sendable {
    /// What a session remembers: its instructions, the conversation, and the options it runs
    /// with. `Codable`, so an app can store it and resume later
    /// (``ChatSession/init(provider:transcript:tools:maxToolRounds:)``).
    public struct Transcript: Sendable, Codable, Equatable {
        /// The format's version.
        public var version = 1
        /// The instructions (sent as the system message), if any.
        public var instructions: String?
        /// The conversation after the instructions: prompts, replies (with their tool calls and
        /// reasoning) and tool results, in order.
        public var messages: [ChatMessage]
        /// The options each turn runs with unless a call gives its own.
        public var options: ChatOptions

        /// A transcript (an empty conversation by default).
        public init(instructions: String? = nil, messages: [ChatMessage] = [], options: ChatOptions = ChatOptions()) {
            self.instructions = instructions
            self.messages = messages
            self.options = options
        }

        /// The messages a request carries: the instructions as a system message, then ``messages``.
        public var conversation: [ChatMessage] {
            (instructions.map { [ChatMessage.system($0)] } ?? []) + messages
        }
    }

    /// A tool call the session ran: the call and what the tool returned (what the model read).
    public struct ToolCallRecord: Sendable, Codable, Equatable {
        /// The call, as the model made it.
        public var call: ToolCall
        /// The tool's output as the model read it (an error text when the arguments did not
        /// decode or no tool has the name, so the model can correct itself).
        public var result: String
    }

    /// The answer to one prompt.
    public struct Response: Sendable {
        /// The answer's text (the last reply, which called no tool).
        public var text: String
        /// The last reply as the provider returned it (usage, finish reason, who served it, reasoning).
        public var reply: ChatResponse
        /// The tools the session ran for this prompt, in order.
        public var toolCalls: [ToolCallRecord]
        /// What the turn added to the transcript: the prompt, each reply and tool result, the answer.
        public var messages: [ChatMessage]
    }

    /// One step of a streamed answer (``streamResponse(to:options:)``).
    public enum Update: Sendable {
        /// The provider (its id) whose text follows.
        case servedBy(String)
        /// A router moved to another provider; text already streamed stays valid.
        case switchedProvider(from: String, to: String, reason: ProviderError)
        /// The next piece of reasoning (reasoning models only), never part of the text.
        case reasoningDelta(String)
        /// The next piece of the answer's text. Pieces of replies that called tools come too,
        /// in order (a model may say "Let me look that up." before calling).
        case textDelta(String)
        /// The session ran a tool the model called; the next reply reads its result.
        case toolCalled(ToolCallRecord)
        /// The answer is complete and in the transcript. Always the last update.
        case completed(Response)
    }

    /// A saved session: the transcript and, for a provider that keeps a conversation's state
    /// (``ConversationSnapshotting``: HearthLocal's `LocalProvider`), its KV-cache snapshot, so a
    /// restored session continues without processing the conversation again.
    /// `Codable` (the snapshot as base64 in JSON; HearthLocal's `ConversationFile` stores it
    /// compressed in a `.hchat` file).
    public struct SavedState: Sendable, Codable {
        /// The transcript.
        public var transcript: Transcript
        /// The provider's snapshot of the conversation, if it makes one (nil for cloud providers).
        public var snapshot: Data?
        /// The provider that saved it (its id).
        public var provider: String

        /// A saved state.
        public init(transcript: Transcript, snapshot: Data? = nil, provider: String) {
            self.transcript = transcript
            self.snapshot = snapshot
            self.provider = provider
        }
    }

    /// The model the session talks to.
    public let provider: any LanguageModelProvider
    /// The tools the model may call; the session runs them.
    public let tools: [any FunctionTool]
    /// The most replies per prompt that may call tools before the turn fails with
    /// ``ToolCallError/Kind/tooManyRounds``.
    public let maxToolRounds: Int
    /// Whether ``restore(_:provider:tools:maxToolRounds:)`` put the saved KV snapshot back
    /// (false for a new session, a cloud provider, or a snapshot the provider refused).
    public let restoredSnapshot: Bool
    /// Why a saved snapshot was not used, when it was not (the session then works as well,
    /// processing the conversation again on its next turn).
    public let snapshotProblem: String?

    private struct State {
        var transcript: Transcript
        var responding = false
    }
    private let state: Mutex<State>

    /// A new session.
    /// - Parameters:
    ///   - provider: any provider: local, cloud, or a router.
    ///   - instructions: the system message that leads every request (nil: none).
    ///   - tools: tools the model may call; the session runs them and sends their results back.
    ///   - options: sampling and length options for every turn (a turn can give its own).
    ///   - maxToolRounds: the most replies per prompt that may call tools.
    public convenience init(
        provider: any LanguageModelProvider, instructions: String? = nil, tools: [any FunctionTool] = [],
        options: ChatOptions = ChatOptions(), maxToolRounds: Int = 8
    ) {
        self.init(
            provider: provider, transcript: Transcript(instructions: instructions, options: options), tools: tools,
            maxToolRounds: maxToolRounds)
    }

    /// A session that continues `transcript` (saved from another session, or built by the app).
    /// A local model processes the conversation again on the next turn (unless its prompt
    /// cache still holds it); ``restore(_:provider:tools:maxToolRounds:)`` also puts back a
    /// saved KV snapshot.
    public convenience init(provider: any LanguageModelProvider, transcript: Transcript, tools: [any FunctionTool] = [], maxToolRounds: Int = 8) {
        self.init(provider: provider, transcript: transcript, tools: tools, maxToolRounds: maxToolRounds, restored: false, problem: nil)
    }

    private init(
        provider: any LanguageModelProvider, transcript: Transcript, tools: [any FunctionTool], maxToolRounds: Int, restored: Bool,
        problem: String?
    ) {
        self.provider = provider
        self.tools = tools
        self.maxToolRounds = max(1, maxToolRounds)
        self.restoredSnapshot = restored
        self.snapshotProblem = problem
        state = Mutex(State(transcript: transcript))
    }

    /// The conversation so far (completed turns only).
    public var transcript: Transcript { state.withLock { $0.transcript } }

    /// Whether a prompt is being answered.
    public var isResponding: Bool { state.withLock { $0.responding } }

    /// Answers `prompt`, running the tools the model calls, and adds the turn to the transcript.
    /// - Parameters:
    ///   - prompt: the user's message for this turn.
    ///   - options: this turn's options (nil: the transcript's).
    /// - Throws: ``ProviderError`` from the provider (`.invalidRequest` also for a session that
    ///   is already answering, or options that do not validate; `.cancelled` when the task is
    ///   cancelled); ``ToolCallError`` when a tool throws or the rounds run out.
    public func respond(to prompt: String, options: ChatOptions? = nil) async throws -> Response {
        try await run(prompt, options: options) { _ in }
    }

    /// ``respond(to:options:)`` as a stream of ``Update``s: text and reasoning as they are
    /// generated, each tool the session runs, and ``Update/completed(_:)`` last. Dropping the
    /// stream (or cancelling its task) cancels the turn; the transcript is then unchanged.
    public func streamResponse(to prompt: String, options: ChatOptions? = nil) -> AsyncThrowingStream<Update, Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    let response = try await self.run(prompt, options: options) { continuation.yield($0) }
                    continuation.yield(.completed(response))
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The session to save: its transcript and, when the provider keeps conversation state
    /// (``ConversationSnapshotting``) and `includingSnapshot`, its snapshot of this conversation.
    /// - Throws: ``ProviderError`` while a prompt is being answered, or when the snapshot fails.
    public func savedState(includingSnapshot: Bool = true) async throws -> SavedState {
        let transcript = try state.withLock { state -> Transcript in
            guard !state.responding else { throw busy() }
            return state.transcript
        }
        var snapshot: Data?
        if includingSnapshot, let keeper = provider as? any ConversationSnapshotting, !transcript.messages.isEmpty {
            do { snapshot = try await keeper.snapshot() } catch { throw ProviderError.wrapping(error, provider: provider.id) }
        }
        return SavedState(transcript: transcript, snapshot: snapshot, provider: provider.id)
    }

    /// A session continuing `saved`: its transcript, and its snapshot put back into `provider`
    /// when the provider keeps conversation state. A snapshot the provider refuses (another
    /// model, a damaged one) is dropped and named in ``snapshotProblem``: the session works the
    /// same, processing the conversation again on its next turn.
    public static func restore(
        _ saved: SavedState, provider: any LanguageModelProvider, tools: [any FunctionTool] = [], maxToolRounds: Int = 8
    ) async -> ChatSession {
        var restored = false
        var problem: String?
        if let snapshot = saved.snapshot {
            if let keeper = provider as? any ConversationSnapshotting {
                do {
                    try await keeper.restore(snapshot)
                    restored = true
                } catch {
                    problem = (error as? LocalizedError)?.errorDescription ?? "\(error)"
                }
            } else {
                problem = "the provider '\(provider.id)' keeps no conversation state; the snapshot was not used"
            }
        }
        return ChatSession(
            provider: provider, transcript: saved.transcript, tools: tools, maxToolRounds: maxToolRounds, restored: restored,
            problem: problem)
    }

    private func busy() -> ProviderError {
        ProviderError(
            .invalidRequest, provider: provider.id,
            message: "This session is already answering a prompt; wait for that answer, or use another session.")
    }

    /// One turn: rounds of the provider's reply and the tools it calls, until a reply calls none.
    /// `offerTools` false: the tools are not sent (a structured turn: the local model cannot take
    /// a response format together with tools).
    func run(_ prompt: String, options: ChatOptions?, offerTools: Bool = true, emit: (Update) -> Void) async throws -> Response {
        let transcript = try state.withLock { state -> Transcript in
            guard !state.responding else { throw busy() }
            state.responding = true
            return state.transcript
        }
        defer { state.withLock { $0.responding = false } }

        var options = options ?? transcript.options
        if offerTools, !tools.isEmpty { options.tools = tools.map(\.definition) }
        do { try options.validate() } catch {
            throw ProviderError(.invalidRequest, provider: provider.id, message: error.message, underlying: error)
        }
        var messages = transcript.conversation
        let start = messages.count
        messages.append(.user(prompt))
        var made: [ToolCallRecord] = []
        for _ in 0..<maxToolRounds {
            var reply = try await streamRound(ChatRequest(messages: messages, options: options), emit: emit)
            // Call ids must be unique in a conversation (the APIs pair each result with its call
            // by id): a provider that numbers its calls per reply (`call_0` every turn) or sends
            // none gets fresh ones here, used for the call and its result alike.
            var seen = Set(messages.flatMap { $0.toolCalls.map(\.id) })
            for index in reply.toolCalls.indices where reply.toolCalls[index].id.isEmpty || !seen.insert(reply.toolCalls[index].id).inserted {
                reply.toolCalls[index].id = ToolCall.newID()
                seen.insert(reply.toolCalls[index].id)
            }
            messages.append(reply.assistantMessage)
            guard !reply.toolCalls.isEmpty else {
                let added = Array(messages[start...])
                let response = Response(text: reply.text, reply: reply, toolCalls: made, messages: added)
                state.withLock { $0.transcript.messages.append(contentsOf: added) }
                return response
            }
            for call in reply.toolCalls {
                let record = ToolCallRecord(call: call, result: try await runTool(call))
                made.append(record)
                messages.append(.tool(record.result, callID: call.id))
                emit(.toolCalled(record))
            }
            options.toolChoice = .auto  // a forced choice applies to the first round only
        }
        throw ToolCallError(.tooManyRounds, tool: "", message: "the model was still calling tools after \(maxToolRounds) rounds")
    }

    /// Runs one call: arguments that do not decode, or a tool that does not exist, become an
    /// error text the model reads (so it may correct itself); a tool that throws ends the turn.
    private func runTool(_ call: ToolCall) async throws -> String {
        guard let tool = tools.first(where: { $0.name == call.name }) else {
            return "Error: there is no tool named \(call.name); the tools are \(tools.map(\.name).joined(separator: ", "))."
        }
        do {
            return try await tool.call(json: call.arguments)
        } catch let error as ToolCallError where error.kind == .invalidArguments {
            return "Error: \(error.message). Call \(call.name) again with arguments that follow its schema."
        }
    }

    /// Streams one reply, forwarding its text and reasoning, and collects it as
    /// ``LanguageModelProvider/complete(_:)`` does.
    private func streamRound(_ request: ChatRequest, emit: (Update) -> Void) async throws -> ChatResponse {
        var text = ""
        var usage: Usage?
        var finishReason: FinishReason?
        var served = provider.id
        var calls = ToolCallCollector()
        var reasoning: [ReasoningPart] = []
        do {
            for try await event in provider.stream(request) {
                switch event {
                case .textDelta(let delta):
                    text += delta
                    emit(.textDelta(delta))
                case .reasoningDelta(let delta): emit(.reasoningDelta(delta))
                case .usage(let value): usage = value
                case .finished(let reason): finishReason = reason
                case .servedBy(let name):
                    served = name
                    emit(.servedBy(name))
                case .switchedProvider(let from, let to, let reason):
                    served = to
                    reasoning = []  // the failed provider's reasoning is not this reply's
                    emit(.switchedProvider(from: from, to: to, reason: reason))
                case .toolCall(let step): calls.add(step)
                case .reasoningEnded(let part): reasoning.append(part)
                case .contextTruncated, .dialogState: break
                }
            }
            // A cancelled consumer ends the provider's stream early without an error: the reply
            // is cut, and must not enter the transcript.
            try Task.checkCancellation()
        } catch {
            throw ProviderError.wrapping(error, provider: provider.id)
        }
        return ChatResponse(
            text: text, toolCalls: calls.calls, usage: usage, finishReason: finishReason ?? .stop, provider: served, reasoning: reasoning)
    }
}

/// A provider that can hand out and take back its state of the last conversation — the local
/// model's KV cache — so a ``ChatSession`` saved with it continues without the conversation
/// being processed again (HearthLocal's `LocalProvider` conforms).
public protocol ConversationSnapshotting: LanguageModelProvider {
    /// The state of the conversation last served (opaque bytes, tied to the model).
    func snapshot() async throws -> Data
    /// Puts back a ``snapshot()`` made on the same model; throws (leaving the provider usable)
    /// for one it cannot take.
    func restore(_ snapshot: Data) async throws
}
