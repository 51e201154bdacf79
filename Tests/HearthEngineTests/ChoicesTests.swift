import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// Several continuations of one prompt (OpenAI's `n`): the prompt is processed once, every
/// other choice forks from its keys and values, and each choice gets the tokens it gets alone.
@Suite struct ChoicesTests {
    static func model() throws -> TransformerModel {
        try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
    }

    static func prompt(_ seed: Int, length: Int, vocab: Int) -> [Int32] {
        (0..<length).map { Int32((seed * 7919 + $0 * 104_729 + 13) % (vocab - 10) + 5) }
    }

    static func sampled(seed: UInt64, maxTokens: Int = 12) -> GenerationParameters {
        var p = GenerationParameters()
        p.maxTokens = maxTokens
        p.sampling.temperature = 0.9
        p.sampling.seed = seed
        return p
    }

    struct Collected {
        var ids: [[Int32]]
        var summaries: [GenerationSummary?]
        /// Choices in the order their first token arrived.
        var firstTokenOrder: [Int] = []
    }

    static func collect(_ stream: AsyncThrowingStream<ChoiceEvent, Error>, count: Int) async throws -> Collected {
        var result = Collected(ids: Array(repeating: [], count: count), summaries: Array(repeating: nil, count: count))
        for try await item in stream {
            switch item.event {
            case .token(let token):
                if result.ids[item.choice].isEmpty { result.firstTokenOrder.append(item.choice) }
                result.ids[item.choice].append(token.id)
            case .done(let summary):
                #expect(result.summaries[item.choice] == nil, "choice \(item.choice) ended twice")
                result.summaries[item.choice] = summary
            }
        }
        return result
    }

    static func alone(_ model: TransformerModel, _ prompt: [Int32], _ p: GenerationParameters) async throws -> [Int32] {
        var ids: [Int32] = []
        for try await event in try Generator(model: model, context: 64, threads: 2).generate(prompt: prompt, parameters: p) {
            if case .token(let token) = event { ids.append(token.id) }
        }
        return ids
    }

    /// Four seeded choices in four slots: each is the sequence its seed gives alone (the batch's
    /// logits differ from a lone run's by rounding, as in `seededSamplingIsTheSameInABatch`),
    /// the first processed the prompt and the other three reused all of it.
    @Test func eachChoiceIsItsSeedsSequenceAndThePromptIsProcessedOnce() async throws {
        let model = try Self.model()
        let prompt = Self.prompt(5, length: 9, vocab: model.options.vocabSize)
        let choices = (0..<4).map { Self.sampled(seed: 100 + UInt64($0)) }
        var expected: [[Int32]] = []
        for p in choices { expected.append(try await Self.alone(model, prompt, p)) }
        #expect(Set(expected).count > 1, "the seeds should give different continuations")

        let generator = try Generator(model: model, context: 64, threads: 2, batch: 16, sequences: 4)
        let got = try await Self.collect(generator.generate(prompt: prompt, choices: choices), count: 4)
        #expect(got.ids == expected)
        #expect(got.summaries[0]?.cachedPromptTokens == 0)
        for i in 1..<4 {
            #expect(got.summaries[i]?.cachedPromptTokens == prompt.count, "choice \(i) recomputed the prompt")
            #expect(got.summaries[i]?.promptTokens == prompt.count)
        }
        #expect(generator.load.running == 0 && generator.load.waiting == 0)
        // The steps' counts (the server's batch-occupancy metric): four sequences decoded in
        // the same steps, so most steps held more than one; every token went through a step.
        let steps = generator.stepStatistics
        let generated = got.ids.reduce(0) { $0 + $1.count }
        #expect(steps.steps > 0 && steps.sequences > steps.steps, "\(steps)")
        #expect(steps.tokens >= prompt.count + generated - 4, "\(steps): \(generated) generated")
        #expect(steps.sequences <= 4 * steps.steps)
    }

    /// More choices than slots: those without a slot wait, then reuse the prompt the cache
    /// holds (all but its last token, whose logits they need); every choice completes with
    /// its own seed's tokens.
    @Test func choicesBeyondTheSlotsWaitAndReuseThePrompt() async throws {
        let model = try Self.model()
        let prompt = Self.prompt(8, length: 20, vocab: model.options.vocabSize)
        let choices = (0..<5).map { Self.sampled(seed: 7 + UInt64($0), maxTokens: 6) }
        var expected: [[Int32]] = []
        for p in choices { expected.append(try await Self.alone(model, prompt, p)) }
        let generator = try Generator(model: model, context: 64, threads: 2, batch: 16, sequences: 2)
        let got = try await Self.collect(generator.generate(prompt: prompt, choices: choices), count: 5)
        #expect(got.ids == expected)
        #expect(got.summaries.allSatisfy { $0 != nil })
        for i in 1..<5 {
            #expect((got.summaries[i]?.cachedPromptTokens ?? 0) >= prompt.count - 1, "choice \(i) recomputed the prompt")
        }
        #expect(generator.load.running == 0 && generator.load.waiting == 0)
    }

    /// Stopping one choice (its flag) ends only that one; dropping the stream ends them all and
    /// frees every slot; a bad count or parameter is a typed error.
    @Test func stoppingAndCancellingChoices() async throws {
        let model = try Self.model()
        let prompt = Self.prompt(2, length: 6, vocab: model.options.vocabSize)
        let generator = try Generator(model: model, context: 96, threads: 2, batch: 16, sequences: 3)
        // Set before it starts (the scheduler runs ahead of the stream's consumer): the choice
        // ends `cancelled` when it would fork, the others run to their end.
        let stop = CancellationFlag()
        stop.set()
        var collected = Collected(ids: [[], [], []], summaries: [nil, nil, nil])
        let choices = (0..<3).map { Self.sampled(seed: UInt64($0), maxTokens: 40) }
        for try await item in generator.generate(prompt: prompt, choices: choices, stops: [nil, stop, nil]) {
            switch item.event {
            case .token(let token):
                collected.ids[item.choice].append(token.id)
            case .done(let summary): collected.summaries[item.choice] = summary
            }
        }
        #expect(collected.summaries[1]?.finishReason == .cancelled)
        #expect(collected.ids[1].isEmpty)
        #expect(collected.summaries[0]?.finishReason != .cancelled && collected.summaries[2]?.finishReason != .cancelled)
        #expect(collected.ids[0].count == 40 || collected.summaries[0]?.finishReason == .stop)

        // Dropped after the first token: every choice stops within a step.
        let task = Task {
            var count = 0
            for try await item in generator.generate(prompt: prompt, choices: choices) {
                if case .token = item.event {
                    count += 1
                    if count == 1 { break }
                }
            }
        }
        try await task.value
        for _ in 0..<200 where generator.load.running > 0 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(generator.load.running == 0 && generator.load.waiting == 0)

        await #expect(throws: EngineError.self) {
            _ = try await Self.collect(generator.generate(prompt: prompt, choices: []), count: 0)
        }
        await #expect(throws: EngineError.self) {
            let many = Array(repeating: Self.sampled(seed: 1), count: Generator.maxChoices + 1)
            _ = try await Self.collect(generator.generate(prompt: prompt, choices: many), count: many.count)
        }
        var bad = Self.sampled(seed: 1)
        bad.maxTokens = -1
        await #expect(throws: EngineError.self) {
            _ = try await Self.collect(generator.generate(prompt: prompt, choices: [Self.sampled(seed: 1), bad]), count: 2)
        }
    }

    /// A prompt the cache holds but for its last token (asked for again) feeds that token as a
    /// decode row, which prompt lookup follows with drafts when the prompt ends with an n-gram
    /// it holds earlier: the choices still fork from the prompt's last position and each gets
    /// its seed's tokens alone (they forked from the first drafted position before, so every
    /// choice but the first continued one token too late: `hearth serve`'s n=3 streamed reply).
    /// On the exact activation path, so the cached run's decode row and a lone run's prompt row
    /// multiply alike.
    @Test func choicesForkFromThePromptWhenItsLastTokenDrafts() async throws {
        let model = try Self.model()
        let head = Self.prompt(11, length: 8, vocab: model.options.vocabSize)
        let prompt = head + head.prefix(4)  // its last 4-gram is its first: lookup drafts head[4...]
        let choices = (0..<3).map { Self.sampled(seed: 60 + UInt64($0), maxTokens: 6) }
        var expected: [[Int32]] = []
        for p in choices {
            var ids: [Int32] = []
            let lone = try Generator(model: model, context: 64, threads: 2)
            lone.activationPrecision = .wide
            for try await event in try lone.generate(prompt: prompt, parameters: p) {
                if case .token(let token) = event { ids.append(token.id) }
            }
            expected.append(ids)
        }
        #expect(Set(expected).count > 1, "the seeds should give different continuations")

        let generator = try Generator(model: model, context: 64, threads: 2, batch: 16, sequences: 4)
        generator.activationPrecision = .wide
        for try await _ in try generator.generate(prompt: prompt, parameters: Self.sampled(seed: 1, maxTokens: 1)) {}
        let got = try await Self.collect(generator.generate(prompt: prompt, choices: choices), count: 3)
        #expect(got.summaries[0]?.cachedPromptTokens == prompt.count - 1)
        #expect((got.summaries[0]?.draftedTokens ?? 0) > 0, "the leader drafted")
        #expect(got.ids == expected)
        #expect(generator.load.running == 0 && generator.load.waiting == 0)
    }
}
