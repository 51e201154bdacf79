import ArgumentParser
import Foundation
import HearthConstraints
import HearthEngine
import HearthTokenizers

/// `hearth bench-structured`: what structured output costs on a model's vocabulary.
struct BenchStructured: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-structured",
        abstract: "Measure structured output: schema compile time, per-step token-mask time, decode speed with a schema.",
        discussion: """
            For every JSON Schema in --schemas (*.json, sorted by name): compile time (the first
            schema also pays for the fragments every schema shares, such as a JSON string's body,
            which are then cached per vocabulary; a schema compiled a second time is served from
            the compiled-constraint cache and not counted), then the time of each step's mask on
            outputs the model generates under the schema (sampled at temperature 1 with --seeds
            seeds), replayed through a fresh matcher; then, for --decode-schemas schemas, decode
            tokens/s with the schema against the same generation without it (same prompt, seed and
            token count, speculative decoding off on both: the mask's cost), and the generation
            without it once more with prompt lookup on (the default). Figures: median, p90, p99 and
            max.
            """)

    @OptionGroup var model: ModelOptions
    @OptionGroup var workers: ThreadsOption

    @Option(name: .long, help: "Directory of JSON Schema files (*.json).")
    var schemas: String = "Tests/Fixtures/schemas"

    @Option(name: .long, help: "Generations per schema whose steps are timed.")
    var seeds: Int = 2

    @OptionGroup var length: MaxTokensOption
    var maxTokens: Int { length.value(default: 160) }

    @Option(name: .long, help: "How many schemas (the first ones) the decode-speed comparison uses (0 skips it).")
    var decodeSchemas: Int = 6

    @Flag(name: .long, help: "Compute the whole output head under a schema too (default: only the 16-token groups holding a token the schema allows at that step; the tokens chosen are the same).")
    var fullHead = false

    @Flag(name: .long, help: "Print JSON instead of a markdown summary.")
    var json = false

    func validate() throws {
        if seeds < 1 || decodeSchemas < 0 { throw ValidationError("--seeds must be ≥ 1, --decode-schemas ≥ 0") }
    }

    struct Figures: Encodable {
        var vocabulary_tokens = 0
        var trie_nodes = 0
        var vocabulary_build_ms = 0.0
        var schemas = 0
        var first_compile_ms = 0.0
        var compile_ms: [String: Double] = [:]
        var mask_steps = 0
        var mask_us: [String: Double] = [:]
        var decode_tokens_per_second_with: Double = 0
        var decode_tokens_per_second_without: Double = 0
        var decode_ratio: Double = 0
        /// The unconstrained runs again with prompt-lookup speculation on (the CLI's default):
        /// how fast a plain reply that copies from the prompt (here, the schema) decodes.
        var decode_tokens_per_second_without_lookup: Double = 0
        /// The slowest schemas to compile and the slowest step of each schema, for finding outliers.
        var slowest_compiles: [String: Double] = [:]
        var slowest_masks: [String: Double] = [:]
        var outputs_stopped = 0
        var outputs_cut = 0
        /// Constrained steps whose head computed only the allowed token groups, and the share of
        /// the head's groups those steps computed.
        var sparse_head_steps = 0
        var sparse_head_share = 0.0
    }

    // Long: the command from load to report: constrained and plain runs alternate over the same prompts
    // with the same model and seeds, sharing the figures they accumulate; the report is built from
    // those figures.
    func run() throws {
        try reportingErrors {
            let lm = try model.load(threads: workers.threads, showProgress: !json)
            var figures = Figures()
            let t0 = DispatchTime.now()
            let vocabulary = lm.constraintVocabulary
            figures.vocabulary_build_ms = milliseconds(since: t0)
            figures.vocabulary_tokens = vocabulary.count
            figures.trie_nodes = vocabulary.trieNodes

            let directory = URL(fileURLWithPath: schemas)
            let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
            guard !files.isEmpty else { throw ValidationError("no *.json schema in \(schemas)") }
            var compiles: [Double] = []
            var compiled: [(name: String, constraint: CompiledConstraint)] = []
            for (i, file) in files.enumerated() {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                let start = DispatchTime.now()
                let grammar = try JSONSchema.grammar(text)
                let constraint = try lm.compileConstraint(grammar)
                let ms = milliseconds(since: start)
                if i == 0 { figures.first_compile_ms = ms } else { compiles.append(ms) }
                figures.slowest_compiles[file] = ms
                compiled.append((file, constraint))
            }
            figures.schemas = files.count
            figures.compile_ms = summary(compiles)

            // Room for a long schema in the prompt (the long-array and deep-object schemas are over 2k tokens on a 32k vocabulary).
            let generator = try Generator(model: lm, context: min(lm.options.maxContext, 4096), threads: workers.threads, sequences: 1)
            generator.sparseHead = !fullHead
            var maskTimes: [Double] = []
            var decodeWith: [Double] = [], decodeWithout: [Double] = [], decodeWithoutLookup: [Double] = []
            let bar = json ? nil : ProgressBar(label: "schemas")
            defer { bar?.finish() }
            for (index, entry) in compiled.enumerated() {
                bar?.update(Double(index) / Double(compiled.count))
                let schemaText = try String(contentsOf: directory.appendingPathComponent(entry.name), encoding: .utf8)
                let prompt = try lm.chatPrompt([
                    ChatTurn(role: "user", content: "Reply with JSON that follows this schema:\n\(schemaText)")
                ])
                for seed in 1...seeds {
                    var parameters = GenerationParameters()
                    parameters.maxTokens = maxTokens
                    parameters.sampling.temperature = 1.0
                    parameters.sampling.seed = UInt64(seed)
                    parameters.constraint = entry.constraint
                    // The mask's cost alone: both runs of a pair decode one token per step.
                    parameters.speculative = .off
                    parameters.logprobs = false  // as the server runs a request that asks for none
                    var ids: [Int32] = []
                    let result = try generator.run(prompt: prompt, parameters: parameters) { ids.append($0.id) }
                    if result.finishReason == .stop { figures.outputs_stopped += 1 } else { figures.outputs_cut += 1 }
                    // Replay through a fresh matcher, timing each step's mask.
                    var matcher = ConstraintMatcher(entry.constraint)
                    var mask: [UInt64] = []
                    for id in ids {
                        let start = DispatchTime.now()
                        matcher.fillMask(&mask)
                        let us = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1000
                        maskTimes.append(us)
                        figures.slowest_masks[entry.name] = max(figures.slowest_masks[entry.name] ?? 0, us)
                        matcher.advance(id)
                    }
                    if index < decodeSchemas && seed == 1 && result.completionTokens > 8 {
                        var plain = parameters
                        plain.constraint = nil
                        plain.maxTokens = result.completionTokens
                        let unconstrained = try generator.run(prompt: prompt, parameters: plain) { _ in }
                        if unconstrained.completionTokens == result.completionTokens {
                            decodeWith.append(result.decodeTokensPerSecond)
                            decodeWithout.append(unconstrained.decodeTokensPerSecond)
                            var lookup = plain
                            lookup.speculative = .lookup
                            decodeWithoutLookup.append(try generator.run(prompt: prompt, parameters: lookup) { _ in }.decodeTokensPerSecond)
                        }
                    }
                }
            }
            figures.slowest_compiles = Dictionary(uniqueKeysWithValues: figures.slowest_compiles.sorted { $0.value > $1.value }.prefix(5).map { ($0.key, $0.value) })
            figures.slowest_masks = Dictionary(uniqueKeysWithValues: figures.slowest_masks.sorted { $0.value > $1.value }.prefix(5).map { ($0.key, $0.value) })
            figures.mask_steps = maskTimes.count
            figures.mask_us = summary(maskTimes)
            let with = decodeWith.reduce(0, +) / Double(max(1, decodeWith.count))
            let without = decodeWithout.reduce(0, +) / Double(max(1, decodeWithout.count))
            figures.decode_tokens_per_second_with = with
            figures.decode_tokens_per_second_without = without
            figures.decode_ratio = without > 0 ? with / without : 0
            let steps = generator.stepStatistics
            figures.sparse_head_steps = steps.sparseHeadSteps
            let groups = (lm.options.vocabSize + 15) / 16
            figures.sparse_head_share = steps.sparseHeadSteps > 0 ? Double(steps.sparseHeadGroups) / Double(steps.sparseHeadSteps * groups) : 0
            figures.decode_tokens_per_second_without_lookup = decodeWithoutLookup.reduce(0, +) / Double(max(1, decodeWithoutLookup.count))

            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                emit(String(decoding: try encoder.encode(figures), as: UTF8.self) + "\n")
            } else {
                emit("""
                    vocabulary: \(figures.vocabulary_tokens) tokens, \(figures.trie_nodes) trie nodes, built in \(format(figures.vocabulary_build_ms)) ms
                    compile: first schema \(format(figures.first_compile_ms)) ms; the other \(compiles.count): \(describe(figures.compile_ms, unit: "ms"))
                    mask per step (\(figures.mask_steps) steps): \(describe(figures.mask_us, unit: "µs"))
                    outputs: \(figures.outputs_stopped) complete, \(figures.outputs_cut) cut by the token limit
                    output head: \(fullHead ? "whole (--full-head)" : "\(figures.sparse_head_steps) constrained steps computed \(format(100 * figures.sparse_head_share, digits: 1))% of its token groups")
                    decode (speculation off on both): \(format(with)) tok/s with a schema, \(format(without)) without (ratio \(format(figures.decode_ratio, digits: 3)), \(decodeWith.count) pairs); without a schema and with prompt lookup: \(format(figures.decode_tokens_per_second_without_lookup)) tok/s

                    """)
            }
        }
    }

    private func summary(_ values: [Double]) -> [String: Double] {
        guard !values.isEmpty else { return [:] }
        let sorted = values.sorted()
        func at(_ q: Double) -> Double { sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded()))] }
        return ["median": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": sorted[sorted.count - 1]]
    }

    private func describe(_ s: [String: Double], unit: String) -> String {
        ["median", "p90", "p99", "max"].map { "\($0) \(format(s[$0] ?? 0)) \(unit)" }.joined(separator: ", ")
    }

    private func format(_ v: Double, digits: Int = 1) -> String { String(format: "%.\(digits)f", v) }
}

/// Milliseconds since `start`.
func milliseconds(since start: DispatchTime) -> Double { elapsed(since: start) * 1e3 }
