import ArgumentParser
import Foundation
import HearthEngine

struct Perplexity: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure perplexity over a text file with llama-perplexity's method.",
        discussion: """
            The text is tokenized once (with BOS), cut into non-overlapping chunks of --ctx tokens
            whose first token is replaced by BOS; each chunk is evaluated from an empty cache and
            the second half of its positions is scored (negative log-likelihood of the next token).
            """)

    @OptionGroup var model: ModelOptions

    @Option(name: .long, help: "The text file to score.")
    var file: String

    @Option(name: .long, help: "Tokens per chunk.")
    var ctx: Int = 512

    @Option(name: [.customShort("t"), .long], help: "Worker threads (default: all cores).")
    var threads: Int?

    @Option(name: .long, help: "First scored position in each chunk (default: ctx/2, as llama-perplexity; 0 scores every position).")
    var first: Int?

    @Option(name: .long, help: "Score at most this many chunks (default: all).")
    var chunks: Int?

    @Option(name: .long, help: "Also write one JSON line per scored position (token, argmax, logprob) to this file.")
    var perToken: String?

    @Flag(name: .long, help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        if ctx < 4 { throw ValidationError("--ctx must be at least 4") }
        if let chunks, chunks < 1 { throw ValidationError("--chunks must be at least 1") }
    }

    struct Result: Encodable {
        let perplexity: Double
        let tokens: Int
        let chunks: Int
        let scored: Int
    }

    struct Position: Encodable {
        let chunk: Int
        let position: Int
        let next: Int32
        let argmax: Int32
        let logprob: Float
    }

    func run() throws {
        try reportingErrors {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ValidationError("cannot read \(file)")
            }
            let lm = try model.load(threads: threads)
            let tokens = try lm.tokenizer.encode(String(decoding: data, as: UTF8.self), addSpecialTokens: true)
            let available = tokens.count / ctx
            let count = min(available, chunks ?? available)
            guard count > 0 else {
                throw ValidationError("the text is \(tokens.count) tokens; it needs at least --ctx \(ctx) tokens")
            }
            let generator = try Generator(model: lm, context: ctx, threads: threads, batch: min(ctx, 512), kvType: .f16)
            let vocab = lm.options.vocabSize
            let first = min(max(0, self.first ?? ctx / 2), ctx - 2)
            var nll = 0.0
            var scored = 0
            var perTokenLines = ""
            let bar = ProgressBar(label: "perplexity")
            for c in 0..<count {
                var chunk = Array(tokens[(c * ctx)..<((c + 1) * ctx)])
                if let bos = lm.tokenizer.bosID { chunk[0] = bos }
                generator.reset()
                let logits = try generator.logits(for: chunk)
                for position in first..<(ctx - 1) {
                    let row = Array(logits[(position * vocab)..<((position + 1) * vocab)])
                    let normalizer = row.withUnsafeBufferPointer { LogProbabilities.normalizer($0) }
                    let next = chunk[position + 1]
                    let logprob = row[Int(next)] - normalizer
                    nll -= Double(logprob)
                    scored += 1
                    if perToken != nil {
                        let argmax = Int32(row.indices.max { row[$0] < row[$1] } ?? 0)
                        perTokenLines += try jsonLine(Position(chunk: c, position: position, next: next, argmax: argmax, logprob: logprob))
                    }
                }
                bar.update(Double(c + 1) / Double(count))
            }
            bar.finish()
            if let perToken { try perTokenLines.write(toFile: perToken, atomically: true, encoding: .utf8) }
            let result = Result(perplexity: exp(nll / Double(scored)), tokens: tokens.count, chunks: count, scored: scored)
            emit(json ? try jsonLine(result) : String(format: "perplexity %.4f over %d chunks of %d tokens (%d scored)\n", result.perplexity, count, ctx, scored))
        }
    }
}
