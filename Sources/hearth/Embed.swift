import ArgumentParser
import Foundation
import HearthEngine

struct Embed: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print embedding vectors of texts as JSON.",
        discussion: """
            Each text is tokenized as a prompt is (BOS added as the tokenizer config says) and run
            through the model in batched forward passes with no sampling; its final hidden states
            (after the final norm) are pooled — the mean over its tokens, or the last token's with
            --pooling last — and L2-normalised. A text's vector does not depend on the other texts.
            Output, one line:
            {"data":[{"embedding":[…],"index":0}],"dimensions":N,"model":"…","usage":{"prompt_tokens":N}}
            """)

    @OptionGroup var model: ModelOptions

    @Option(name: .long, help: "A text to embed; repeat for several (vectors come back in this order).")
    var text: [String] = []

    @Option(name: .long, help: "How a text's token states become one vector: mean (over every token; the default) or last (the last token's).")
    var pooling: EmbeddingPooling = .mean

    @OptionGroup var workers: ThreadsOption

    @OptionGroup var context: ContextOption
    @OptionGroup var batching: BatchOption
    @OptionGroup var kv: KVTypeOption

    @Flag(name: .long, help: "Add \"timings\" to the JSON: seconds to load the model and to embed (the forward passes and pooling, after tokenizing), and tokens per second.")
    var timings = false

    func validate() throws {
        if text.isEmpty { throw ValidationError("give at least one --text") }
        if text.contains(where: \.isEmpty) { throw ValidationError("--text must not be empty") }
    }

    /// The JSON printed (OpenAI's embeddings reply, less its `object` fields).
    struct Output: Encodable {
        struct Item: Encodable {
            var index: Int
            var embedding: [Float]
        }
        struct Usage: Encodable {
            var promptTokens: Int
            private enum CodingKeys: String, CodingKey { case promptTokens = "prompt_tokens" }
        }
        var model: String
        var dimensions: Int
        var data: [Item]
        var usage: Usage
        var timings: Timings?
    }

    struct Timings: Encodable {
        var loadSeconds: Double
        var embedSeconds: Double
        var tokensPerSecond: Double
        private enum CodingKeys: String, CodingKey {
            case loadSeconds = "load_seconds", embedSeconds = "embed_seconds", tokensPerSecond = "tokens_per_second"
        }
    }

    func run() throws {
        try reportingErrors {
            let clock = ContinuousClock()
            let loadStart = clock.now
            let lm = try model.load(threads: workers.threads)
            let loaded = clock.now
            let sequences = try text.map { try lm.tokenizer.encode($0, addSpecialTokens: true) }
            let longest = sequences.map(\.count).max() ?? 1
            // Texts longer than --ctx are refused; by default the cache is sized for the longest one given.
            let context = context.ctx ?? min(lm.defaultContext, longest)
            let generator = try Generator(
                model: lm, context: context, threads: workers.threads, batch: batching.batch, kvType: kv.kvType)
            let embedStart = clock.now
            let vectors = try generator.embeddings(for: sequences, pooling: pooling)
            let end = clock.now
            let tokens = sequences.reduce(0) { $0 + $1.count }
            func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
            let embedSeconds = seconds(end - embedStart)
            var output = Output(
                model: lm.name, dimensions: generator.embeddingDimensions,
                data: vectors.enumerated().map { Output.Item(index: $0.offset, embedding: $0.element) },
                usage: .init(promptTokens: tokens))
            if timings {
                output.timings = Timings(
                    loadSeconds: seconds(loaded - loadStart), embedSeconds: embedSeconds,
                    tokensPerSecond: embedSeconds > 0 ? Double(tokens) / embedSeconds : 0)
            }
            emit(try jsonLine(output))
        }
    }
}

extension EmbeddingPooling: ExpressibleByArgument {}
