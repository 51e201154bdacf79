import ArgumentParser
import Foundation
import HearthEngine
import HearthKernels

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure prompt processing (pp) and generation (tg) speed with llama-bench semantics.",
        discussion: """
            pp: p random prompt tokens processed from an empty cache in batches of --batch.
            tg: n single-token decode steps from an empty cache. Tokenization and sampling are
            excluded. One warm-up of each, then r repetitions; mean ± sample standard deviation.
            """)

    @Option(name: .long, help: "Model: Hugging Face or MLX checkpoint directory, .hqf or .gguf file.")
    var model: String

    @Option(name: .long, help: "Quantize float weights at load: q4_0, q4_1 or q8_0.")
    var quantize: DType?

    @Option(name: [.customShort("p"), .long], help: "Prompt tokens for the pp test (0 skips it).")
    var prompt: Int = 512

    @Option(name: [.customShort("n"), .long], help: "Generated tokens for the tg test (0 skips it).")
    var generate: Int = 128

    @Option(name: [.customShort("r"), .long], help: "Repetitions of each test.")
    var repetitions: Int = 5

    @Option(name: [.customShort("t"), .long], help: "Worker threads (default: all cores).")
    var threads: Int?

    @Option(name: [.customShort("b"), .long], help: "Prompt tokens per batch in the pp test.")
    var batch: Int = 512

    @Option(name: .long, help: "KV cache element type: f16 or f32.")
    var kvType: DType = .f16

    @Option(name: .long, help: "Batched products over quantized weights: integer (quantized activations, see --activation-bits) or sgemm (f32 activations: dequantize + BLAS).")
    var prefillPath: String = QuantizedBatchPath.integer.rawValue

    @Option(name: .long, help: "Bits of the activations the integer kernels multiply: 16 (the default; within rounding of f32 activations), mixed (8 for the layers' products over a prompt where the CPU has AVX-512 VNNI — about twice as fast there — 16 for generation and the output head) or 8 (everywhere, as llama.cpp).")
    var activationBits: String = ActivationPrecision.wide.rawValue

    @Flag(name: .long, help: "Print JSON instead of a markdown table.")
    var json = false

    func validate() throws {
        if prompt < 0 || generate < 0 { throw ValidationError("-p and -n must be ≥ 0") }
        if repetitions < 1 { throw ValidationError("-r must be ≥ 1") }
        if batch < 1 || batch > 4096 { throw ValidationError("--batch must be between 1 and 4096") }
        if let threads, threads < 1 || threads > 512 { throw ValidationError("--threads must be between 1 and 512") }
        if QuantizedBatchPath(rawValue: prefillPath) == nil { throw ValidationError("--prefill-path takes integer or sgemm") }
        if ActivationPrecision(rawValue: activationBits) == nil { throw ValidationError("--activation-bits takes 16, mixed or 8") }
    }

    struct Stat: Encodable {
        let tokens_per_second: Double
        let stddev: Double
        let samples: [Double]

        init(_ samples: [Double]) {
            self.samples = samples
            let mean = samples.reduce(0, +) / Double(max(1, samples.count))
            tokens_per_second = mean
            let variance = samples.count > 1
                ? samples.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(samples.count - 1) : 0
            stddev = variance.squareRoot()
        }
    }

    struct Report: Encodable {
        let model: String
        let architecture: String
        let pp: Stat?
        let tg: Stat?
        let prompt_tokens: Int
        let generated_tokens: Int
        let peak_rss_bytes: Int
        let load_seconds: Double
        let threads: Int
        let model_bytes: Int
        let weight_bytes_per_token: Int
        let kv_cache_bytes: Int
        let parameters: Int
        let weight_types: [String: Int]
        let kernel: String
        /// The kernel level in use (KernelLevel.current) and the best this CPU runs.
        let kernel_level: String
        let cpu_best_level: String
        let prefill_path: String
        let activation_bits: String
    }

    func run() throws {
        try reportingErrors {
            let threads = threads ?? WorkerPool.defaultThreadCount
            let lm = try LanguageModel(path: model, quantize: quantize, threads: threads)
            let pool = WorkerPool(threads: threads)
            let context = max(1, prompt + generate)
            let decoder = try Decoder(
                weights: lm.weights, options: lm.options, context: context, maxBatch: batch, kvType: kvType, pool: pool)
            decoder.quantizedBatchPath = QuantizedBatchPath(rawValue: prefillPath) ?? .integer
            decoder.activationPrecision = ActivationPrecision(rawValue: activationBits) ?? .wide
            var rng = SeededGenerator(seed: 1234)
            let vocab = Int32(lm.options.vocabSize)
            func randomTokens(_ n: Int) -> [Int32] { (0..<n).map { _ in Int32.random(in: 0..<vocab, using: &rng) } }

            func measurePP() throws -> Double {
                let tokens = randomTokens(prompt)
                let start = DispatchTime.now()
                _ = try decoder.forward(tokens, from: 0)
                return Double(prompt) / elapsed(since: start)
            }
            func measureTG() throws -> Double {
                var token = randomTokens(1)[0]
                let start = DispatchTime.now()
                for i in 0..<generate {
                    _ = try decoder.forward([token], from: i)
                    token = (token &+ 1) % vocab
                }
                return Double(generate) / elapsed(since: start)
            }
            var pp: Stat?
            var tg: Stat?
            if prompt > 0 {
                _ = try measurePP()
                pp = Stat(try (0..<repetitions).map { _ in try measurePP() })
            }
            if generate > 0 {
                _ = try measureTG()
                tg = Stat(try (0..<repetitions).map { _ in try measureTG() })
            }
            let report = Report(
                model: lm.path.lastPathComponent, architecture: lm.architecture, pp: pp, tg: tg, prompt_tokens: prompt,
                generated_tokens: generate, peak_rss_bytes: peakRSSBytes(), load_seconds: lm.loadSeconds,
                threads: threads, model_bytes: lm.weightBytesByType.values.reduce(0, +),
                weight_bytes_per_token: lm.weightBytesPerToken, kv_cache_bytes: decoder.cache.byteCount,
                parameters: lm.parameterCount,
                weight_types: Dictionary(uniqueKeysWithValues: lm.weightBytesByType.map { ($0.key.rawValue, $0.value) }),
                kernel: quantizedKernelName, kernel_level: KernelLevel.current.rawValue,
                cpu_best_level: KernelLevel.best.rawValue, prefill_path: prefillPath,
                activation_bits: activationBits)
            if json {
                emit(try jsonLine(report))
                return
            }
            let types = lm.weightBytesByType.keys.map(\.rawValue).sorted().joined(separator: "+")
            let size = formatBytes(report.model_bytes)
            let params = String(format: "%.2f B", Double(lm.parameterCount) / 1e9)
            var table = "| model | size | params | backend | threads | test | t/s |\n|---|---|---|---|---|---|---|\n"
            func row(_ test: String, _ s: Stat) {
                table += "| \(lm.architecture) \(types) | \(size) | \(params) | CPU (\(KernelLevel.current.rawValue), a\(activationBits)) | \(threads) | \(test) | \(String(format: "%.2f ± %.2f", s.tokens_per_second, s.stddev)) |\n"
            }
            if let pp { row("pp\(prompt)", pp) }
            if let tg { row("tg\(generate)", tg) }
            table += "\npeak RSS \(formatBytes(report.peak_rss_bytes)), load \(String(format: "%.2f", report.load_seconds)) s, KV cache \(formatBytes(report.kv_cache_bytes)) \(kvType.rawValue)\n"
            emit(table)
        }
    }
}

func elapsed(since start: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
}

/// Peak resident set size of this process in bytes.
func peakRSSBytes() -> Int {
    var usage = rusage()
    #if os(Linux)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Int(usage.ru_maxrss) * 1024
    #else
    getrusage(RUSAGE_SELF, &usage)
    return Int(usage.ru_maxrss)
    #endif
}
