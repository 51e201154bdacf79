import ArgumentParser
import Foundation
import HearthEngine
import HearthKernels

struct Perplexity: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure perplexity over a text file with llama-perplexity's method, or compare a run with a saved one (KL divergence).",
        discussion: """
            The text is tokenized once (with BOS), cut into non-overlapping chunks of --ctx tokens
            whose first token is replaced by BOS; each chunk is evaluated from an empty cache and
            the second half of its positions is scored (negative log-likelihood of the next token).

            KL-divergence mode, as llama-perplexity's: --save-logits FILE keeps each scored
            position's distribution (its --logits-top-k most likely tokens and the rest's mass;
            K = the vocabulary size keeps all of it); a later run with --kl-divergence-base FILE
            (another quantization, kernel level or build of the same model) prints the mean KL
            divergence with its median, 99th percentile and maximum, how often both runs agree
            on the most likely token ("same top", also where the base's top-1/top-2 margin is at
            least 0.1 nats), both perplexities and the mean |Δ log p| of the next token.
            The base decides the chunks, context and scored positions; --file is then optional
            (the base keeps the tokens) and, when given, must tokenize to the same text.
            See docs/ACCURACY.md.
            """)

    @OptionGroup var model: ModelOptions

    @Option(name: .long, help: "The text file to score (optional with --kl-divergence-base: the base file holds the tokens).")
    var file: String?

    @Option(name: [.customShort("c"), .long], help: "Tokens per chunk (default 512, or the base file's).")
    var ctx: Int?

    @OptionGroup var workers: ThreadsOption

    @Option(name: .long, help: "First scored position in each chunk (default: ctx/2, as llama-perplexity; 0 scores every position).")
    var first: Int?

    @Option(name: .long, help: "Score at most this many chunks (default: all).")
    var chunks: Int?

    @Option(name: .long, help: "Also write one JSON line per scored position (token, argmax, logprob) to this file.")
    var perToken: String?

    @Option(name: .long, help: "Write each scored position's distribution to this file, as a base for --kl-divergence-base.")
    var saveLogits: String?

    @Option(name: .long, help: "Most likely tokens kept per position by --save-logits (the rest is kept as one mass; the vocabulary size keeps everything).")
    var logitsTopK: Int = 32

    @Option(name: .long, help: "Compare this run with a file written by --save-logits: KL divergence, same top token, Δ perplexity, |Δ log p|.")
    var klDivergenceBase: String?

    @OptionGroup var kernels: KernelOptions
    @OptionGroup var batching: BatchOption

    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        if let ctx, ctx < 4 { throw ValidationError("--ctx must be at least 4") }
        if let chunks, chunks < 1 { throw ValidationError("--chunks must be at least 1") }
        if logitsTopK < 1 { throw ValidationError("--logits-top-k must be at least 1") }
        if file == nil && klDivergenceBase == nil { throw ValidationError("--file is required (unless --kl-divergence-base gives the tokens)") }
    }

    struct Result: Encodable {
        let perplexity: Double, tokens: Int, chunks: Int, scored: Int
        let klDivergence: DistributionComparison.Summary?

        enum CodingKeys: String, CodingKey {
            case perplexity, tokens, chunks, scored
            case klDivergence = "kl_divergence"
        }
    }

    struct Position: Encodable {
        let chunk: Int, position: Int, next: Int32, argmax: Int32, logprob: Float
    }

    // Long: the command in order: the optional base logits file, chunking, one forward per chunk
    // accumulating log-likelihoods, KL divergence and agreement against the base, then the report; the
    // accumulators are shared across all of it.
    func run() throws {
        try reportingErrors {
            let base = try klDivergenceBase.map { path -> LogitsFile in
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw ValidationError("cannot read the base logits file \(path)")
                }
                return try LogitsFile(data: data, name: path)
            }
            let lm = try model.load(threads: workers.threads, showProgress: !json)
            let ctx = self.ctx ?? base?.header.ctx ?? 512
            var tokens: [Int32]
            if let file {
                guard let data = FileManager.default.contents(atPath: file) else { throw ValidationError("cannot read \(file)") }
                tokens = try lm.tokenizer.encode(String(decoding: data, as: UTF8.self), addSpecialTokens: true)
            } else {
                tokens = base?.tokens ?? []
            }
            let available = tokens.count / ctx
            let count = min(available, chunks ?? base?.header.chunks ?? available)
            guard count > 0 else {
                throw ValidationError("the text is \(tokens.count) tokens; it needs at least --ctx \(ctx) tokens")
            }
            tokens = Array(tokens.prefix(count * ctx))
            let first = min(max(0, self.first ?? base?.header.first ?? ctx / 2), ctx - 2)
            let header = LogitsFile.Header(
                architecture: lm.architecture, model: lm.path.lastPathComponent, layers: lm.options.layerCount,
                hiddenSize: lm.options.hiddenSize, heads: lm.options.headCount, kvHeads: lm.options.kvHeadCount,
                ffnSize: lm.options.ffnSize, vocabSize: lm.options.vocabSize,
                vocabularyHash: LogitsFile.vocabularyHash(lm.tokenizer), ctx: ctx, first: first, chunks: count,
                topK: min(logitsTopK, lm.options.vocabSize))
            try base?.checkComparable(with: header, tokens: tokens)

            let generator = try Generator(model: lm, context: ctx, threads: workers.threads, batch: min(ctx, batching.batch), kvType: kernels.kvType)
            generator.quantizedBatchPath = kernels.batchPath
            generator.activationPrecision = kernels.precision
            let vocab = lm.options.vocabSize
            var saved = saveLogits.map { _ in LogitsFile(header: header, tokens: tokens) }
            var comparison = DistributionComparison()
            var nll = 0.0
            var scored = 0
            var perTokenLines = ""
            let bar = json ? nil : ProgressBar(label: base == nil ? "perplexity" : "KL divergence")
            for c in 0..<count {
                var chunk = Array(tokens[(c * ctx)..<((c + 1) * ctx)])
                if let bos = lm.tokenizer.bosID { chunk[0] = bos }
                generator.reset()
                let logits = try generator.logits(for: chunk)
                try logits.withUnsafeBufferPointer { all in
                    for position in first..<(ctx - 1) {
                        let row = UnsafeBufferPointer(rebasing: all[(position * vocab)..<((position + 1) * vocab)])
                        let next = chunk[position + 1]
                        // log Σ exp once per position, shared by the score, the comparison and the saved file.
                        let normalizer = LogProbabilities.normalizer(row)
                        let logprob = LogProbabilities.of(next, in: row, normalizer: normalizer)
                        if let base { comparison.add(base: base, position: scored, logits: row, normalizer: normalizer, next: next) }
                        saved?.append(logits: row, normalizer: normalizer, next: next)
                        nll -= Double(logprob)
                        scored += 1
                        if perToken != nil {
                            var argmax = 0
                            for i in 1..<row.count where row[i] > row[argmax] { argmax = i }
                            perTokenLines += try jsonLine(
                                Position(chunk: c, position: position, next: next, argmax: Int32(argmax), logprob: logprob))
                        }
                    }
                }
                bar?.update(Double(c + 1) / Double(count))
            }
            bar?.finish()
            if let perToken { try perTokenLines.write(toFile: perToken, atomically: true, encoding: .utf8) }
            if let saveLogits, let saved { try saved.serialized().write(to: URL(fileURLWithPath: saveLogits)) }
            let kld = base == nil ? nil : comparison.summary
            let result = Result(perplexity: exp(nll / Double(scored)), tokens: tokens.count, chunks: count, scored: scored, klDivergence: kld)
            if json {
                emit(try jsonLine(result))
                return
            }
            emit(String(format: "perplexity %.4f over %d chunks of %d tokens (%d scored)\n", result.perplexity, count, ctx, scored))
            if let k = kld, let klDivergenceBase {
                emit(String(format: """
                    KL divergence vs \(klDivergenceBase) over %d positions: mean %.6f, median %.6f, p99 %.6f, max %.6f
                    same top: %.2f%% (%.2f%% of the %d positions where the base's margin is ≥ %.1f nats)
                    perplexity %.4f vs base %.4f (%+.3f%%); mean |Δ log p| %.4f (max %.4f)

                    """, k.positions, k.meanKLD, k.medianKLD, k.p99KLD, k.maxKLD, 100 * k.sameTop,
                    100 * k.sameTopClear, k.clearPositions, Double(DistributionComparison.clearMargin), k.perplexity,
                    k.basePerplexity, 100 * k.deltaPerplexity, k.meanAbsDeltaLogprob, k.maxAbsDeltaLogprob))
            }
        }
    }
}
