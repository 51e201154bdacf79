import Foundation
import HearthEngine
import HearthProviders
import HearthTestSupport
import Testing

@testable import HearthLocal

/// LocalProvider on the fixture models: the provider protocol over the real engine.
@Suite struct LocalProviderTests {
    static func provider(context: Int = 128, batch: Int = 8, parallel: Int = 1) throws -> LocalProvider {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        return try LocalProvider(model: model, context: context, threads: 2, batch: batch, parallel: parallel)
    }

    static let greedy = ChatOptions(temperature: 0, maxTokens: 8)

    static func collect(_ provider: LocalProvider, _ request: ChatRequest) async throws -> (text: String, usage: Usage?, finish: HearthProviders.FinishReason?, events: [ChatEvent]) {
        var text = ""
        var usage: Usage?
        var finish: HearthProviders.FinishReason?
        var events: [ChatEvent] = []
        for try await event in provider.stream(request) {
            events.append(event)
            switch event {
            case .textDelta(let delta): text += delta
            case .usage(let u): usage = u
            case .finished(let f): finish = f
            default: break
            }
        }
        return (text, usage, finish, events)
    }

    @Test func streamsAReplyWithUsage() async throws {
        let provider = try Self.provider()
        #expect(await provider.availability == .available)
        let request = ChatRequest(messages: [.user("How do I bake bread?")], options: Self.greedy)
        let result = try await Self.collect(provider, request)
        if case .servedBy(let id) = result.events.first { #expect(id == "local") } else { Issue.record("no servedBy first") }
        #expect(result.usage?.completionTokens == 8)
        #expect(result.finish == .length)
        #expect(!result.text.isEmpty)
        // Same request through complete() gives the same greedy text.
        let response = try await provider.complete(request)
        #expect(response.text == result.text)
        #expect(response.provider == "local")
    }

    /// `Configuration.defaults` (`hearth serve --seed/--temperature/--max-tokens`) fill what a
    /// request leaves out and never override what it sets.
    @Test func configuredDefaultsFillUnsetFields() async throws {
        var configuration = LocalProvider.Configuration(
            modelPath: Fixtures.checkpoint("phi3-mha").path, context: 128, threads: 2, batch: 8, parallel: 1)
        configuration.defaults = ChatOptions(temperature: 1.5, maxTokens: 6, seed: 11)
        let provider = LocalProvider(configuration: configuration)
        let unset = ChatRequest(messages: [.user("How do I bake bread?")])
        let first = try await Self.collect(provider, unset)
        let second = try await Self.collect(provider, unset)
        #expect(first.usage?.completionTokens == 6)  // the default cap, not the context
        #expect(first.text == second.text)  // the default seed: the same sample twice
        // Other seeds at the default temperature sample other replies (the tiny random model is
        // near-uniform at 1.5), and a request's own cap wins.
        var texts: Set<String> = [first.text]
        for seed in 1...4 {
            let own = ChatRequest(messages: [.user("How do I bake bread?")], options: ChatOptions(maxTokens: 3, seed: seed))
            let result = try await Self.collect(provider, own)
            #expect(result.usage?.completionTokens == 3)
            texts.insert(result.text)
        }
        #expect(texts.count > 2)
        let resolved = await provider.effectiveOptions(ChatOptions())
        #expect(resolved?.temperature == 1.5 && resolved?.seed == 11)
    }

    /// Turn N prefills only its new tokens: the rest comes from the KV cache.
    @Test func multiTurnReusesTheCache() async throws {
        let provider = try Self.provider(context: 512)
        var messages: [ChatMessage] = [.system("You are terse."), .user("Hello there.")]
        var newTokens: [Int] = []
        for turn in 0..<4 {
            let result = try await Self.collect(provider, ChatRequest(messages: messages, options: Self.greedy))
            guard let usage = result.usage else {
                Issue.record("no usage event")
                return
            }
            newTokens.append(usage.promptTokens - (usage.cachedPromptTokens ?? 0))
            if turn > 0 { #expect((usage.cachedPromptTokens ?? 0) > 0) }
            messages.append(.assistant(result.text))
            messages.append(.user("Tell me more about turn \(turn)."))
        }
        // The history grows every turn, but the recomputed part stays about one turn long.
        #expect(newTokens[3] <= newTokens[0] + 16, "recomputed tokens per turn: \(newTokens)")
    }

    @Test func cancellationStopsAndLeavesTheCacheConsistent() async throws {
        let provider = try Self.provider(context: 128)
        let request = ChatRequest(messages: [.user("Count forever.")], options: ChatOptions(temperature: 0, maxTokens: 100))
        let reference = try await provider.complete(ChatRequest(messages: request.messages, options: Self.greedy))
        // Drop the stream after the first text.
        var received = 0
        for try await event in provider.stream(request) {
            if case .textDelta = event {
                received += 1
                break
            }
        }
        #expect(received == 1)
        // The next request still works and gives the reference answer.
        let again = try await provider.complete(ChatRequest(messages: request.messages, options: Self.greedy))
        #expect(again.text == reference.text)
    }

    @Test func overflowIsATypedErrorOrTruncates() async throws {
        let provider = try Self.provider(context: 64)
        var messages: [ChatMessage] = [.system("Be brief.")]
        for i in 0..<12 { messages += [.user("Question number \(i) about bread?"), .assistant("Answer \(i).")] }
        messages.append(.user("Last question?"))
        do {
            _ = try await provider.complete(ChatRequest(messages: messages, options: Self.greedy))
            Issue.record("expected contextLengthExceeded")
        } catch let error as ProviderError {
            guard case .contextLengthExceeded(let tokens, let limit) = error.code else {
                Issue.record("wrong code \(error.code)")
                return
            }
            #expect(limit == 64)
            #expect((tokens ?? 0) > 64)
        }
        let result = try await Self.collect(
            provider, ChatRequest(messages: messages, options: ChatOptions(temperature: 0, maxTokens: 4), allowTruncation: true))
        let dropped = result.events.compactMap { event -> Int? in
            if case .contextTruncated(let n) = event { return n }
            return nil
        }.first
        #expect((dropped ?? 0) > 0)
        #expect(result.usage?.completionTokens ?? 0 > 0)
    }

    @Test func concurrentCallersAllGetTheirAnswers() async throws {
        let provider = try Self.provider(context: 256)
        let questions = ["First?", "Second?", "Third?"]
        var expected: [String] = []
        for q in questions {
            expected.append(try await provider.complete(ChatRequest(messages: [.user(q)], options: Self.greedy)).text)
        }
        let answers = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for (i, q) in questions.enumerated() {
                group.addTask { (i, try await provider.complete(ChatRequest(messages: [.user(q)], options: Self.greedy)).text) }
            }
            var result = [String](repeating: "", count: questions.count)
            for try await (i, text) in group { result[i] = text }
            return result
        }
        #expect(answers == expected)
    }

    /// Callers served together (three sequence slots, decoded in one batch per step) and a
    /// fourth that waits for a slot all get complete answers for their own prompts. (Token
    /// equality with running alone, margin-aware, is BatchedDecodingTests' job: here the
    /// tiny model's near-ties could part the texts.)
    @Test func parallelCallersAreBatchedAndAllAnswered() async throws {
        let provider = try Self.provider(context: 256, batch: 16, parallel: 3)
        let alone = try Self.provider(context: 256, batch: 16)
        let questions = ["First?", "Second question, a longer one?", "Third?", "And a fourth one?"]
        var promptTokens: [Int?] = []
        for q in questions {
            promptTokens.append(try await Self.collect(alone, ChatRequest(messages: [.user(q)], options: Self.greedy)).usage?.promptTokens)
        }
        let results = try await withThrowingTaskGroup(of: (Int, Usage?, HearthProviders.FinishReason?).self) { group in
            for (i, q) in questions.enumerated() {
                group.addTask {
                    let r = try await Self.collect(provider, ChatRequest(messages: [.user(q)], options: Self.greedy))
                    return (i, r.usage, r.finish)
                }
            }
            var out = [(Int, Usage?, HearthProviders.FinishReason?)]()
            for try await r in group { out.append(r) }
            return out.sorted { $0.0 < $1.0 }
        }
        for (i, usage, finish) in results {
            #expect(usage?.promptTokens == promptTokens[i])
            #expect((usage?.completionTokens ?? 0) > 0)
            #expect(finish == .length || finish == .stop)
        }
    }

    @Test func continuationExtendsAPartialAnswer() async throws {
        let provider = try Self.provider(context: 256)
        let messages: [ChatMessage] = [.user("How do I bake bread?")]
        let full = try await provider.complete(ChatRequest(messages: messages, options: ChatOptions(temperature: 0, maxTokens: 12))).text
        let words = full.split(separator: " ", omittingEmptySubsequences: false)
        let partial = words.prefix(max(1, words.count / 2)).joined(separator: " ")
        let rest = try await provider.complete(
            ChatRequest(messages: messages, options: ChatOptions(temperature: 0, maxTokens: 6), continuation: partial)).text
        #expect(!rest.isEmpty)
    }

    @Test func missingModelIsUnavailable() async throws {
        let provider = LocalProvider(configuration: .init(modelPath: "/nonexistent/model"))
        #expect(await provider.availability == .unavailable(.notDownloaded))
        do {
            _ = try await provider.complete(ChatRequest(messages: [.user("hi")]))
            Issue.record("expected an error")
        } catch let error as ProviderError {
            #expect(error.code == .modelUnavailable)
        }
    }

    @Test func prewarmLoadsAndPrefills() async throws {
        let provider = LocalProvider(configuration: .init(modelPath: Fixtures.checkpoint("phi3-mha").path, context: 128, threads: 2))
        let request = ChatRequest(messages: [.system("You are a baker."), .user("Hi")], options: Self.greedy)
        try await provider.prewarm(request)
        #expect(await provider.availability == .available)
        let result = try await Self.collect(provider, request)
        guard let usage = result.usage else {
            Issue.record("no usage event")
            return
        }
        #expect(usage.cachedPromptTokens == usage.promptTokens - 1)
    }
}

/// The `.hchat` conversation file lives in HearthLocal so apps can save and restore a chat.
@Suite struct ConversationFileTests {
    @Test func roundTripsAndKeepsTheConversationWhenTheSnapshotIsDamaged() throws {
        let conversation = ConversationFile.Conversation(
            messages: [.system("Be brief."), .user("hi"), .assistant("hello")], options: ChatOptions(temperature: 0.3),
            provider: "local", model: "/m.gguf", savedAt: Date(timeIntervalSince1970: 1_700_000_000))
        let snapshot = Data((0..<10_000).map { UInt8($0 % 7) })
        let data = try ConversationFile(conversation: conversation, snapshot: snapshot).encoded()
        #expect(Array(data.prefix(8)) == Array("HRTHCHAT".utf8))
        let read = try ConversationFile.decode(data, maxSnapshotBytes: 1 << 20)
        #expect(read.conversation.messages == conversation.messages)
        #expect(read.conversation.options == conversation.options)
        #expect(read.snapshot == snapshot)
        // A damaged snapshot byte: the conversation still loads; the snapshot is reported.
        var damaged = data
        damaged[damaged.count - 3] ^= 0xFF
        let partly = try ConversationFile.decode(damaged, maxSnapshotBytes: 1 << 20)
        #expect(partly.snapshot == nil && partly.snapshotProblem?.contains("checksum") == true)
        #expect(partly.conversation.messages == conversation.messages)
        // A snapshot larger than allowed is refused before decompressing.
        #expect(try ConversationFile.decode(data, maxSnapshotBytes: 100).snapshot == nil)
        #expect(throws: ConversationFileError.self) { try ConversationFile.decode(Data("not a chat".utf8), maxSnapshotBytes: 1) }
    }
}
