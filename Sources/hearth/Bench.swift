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
            tg: n single-token decode steps from an empty cache. With -d D (llama-bench's depth)
            both start from a cache already holding D random tokens (processed once, untimed):
            "pp512 @ d8192", "tg128 @ d8192". Tokenization and sampling are
            excluded. One warm-up of each (none with --no-warmup), then r repetitions; mean ± sample standard deviation.
            With --parallel 1,2,4,8 (llama-batched-bench semantics): for each level N, N sequences
            each get their own p-token prompt (processed together in mixed batches of --batch
            tokens), then n decode steps each feed one token of every sequence in one batch; it
            prints prompt and aggregate decode tokens/s per level.
            With --speculative lookup --prompt-file F: each prompt of F generates n greedy tokens
            (end tokens banned) from an empty cache without speculation and with it, alternating;
            it prints both decode speeds (tokens after the first ÷ decode time, all prompts), the
            ratio (aggregate, median and worst prompt), the draft acceptance and how many texts
            were identical.
            """)

    @OptionGroup var model: ModelOptions

    @Option(name: [.customShort("p"), .long], help: "Prompt tokens for the pp test (0 skips it).")
    var prompt: Int = 512

    @Option(name: [.customShort("n"), .long], help: "Generated tokens for the tg test (0 skips it).")
    var generate: Int = 128

    @Option(name: [.customShort("d"), .long], help: "Tokens already in the cache before each test (llama-bench's depth): pp and tg then measure at that position in a long conversation.")
    var depth: Int = 0

    @Option(name: [.customShort("r"), .long], help: "Repetitions of each test.")
    var repetitions: Int = 5

    @Flag(name: .long, help: "Skip each test's warm-up run (as llama-bench's --no-warmup): for long prompts, where one run takes minutes and a warm-up would double it.")
    var noWarmup = false

    @OptionGroup var workers: ThreadsOption

    @OptionGroup var batching: BatchOption
    var batch: Int { batching.batch }

    @OptionGroup var kernels: KernelOptions

    @Option(name: .long, help: "With --kv-type q8_0 or q4_0: how attention reads the quantized keys: auto (the default, as every other command: integer dots for decode steps, Float tiles for prompts), integer (dot products against 8-bit queries everywhere) or float (every 64-key tile converted to Float), to measure one against another.")
    var kvKeyDots: String = QuantizedKeyDots.automatic.rawValue

    @Option(name: .long, help: "Comma-separated numbers of sequences decoded together (e.g. 1,2,4,8): measure batched decoding of that many sequences, each with its own prompt, instead of pp/tg.")
    var parallel: String?

    @Flag(name: .long, help: "Keep full-length keys and values in sliding-window layers (every layer holds the whole context, as before the window-sized cache), to measure memory and speed against the default window-sized cache.")
    var fullWindowCache = false

    @Option(name: .long, help: "Measure speculative decoding instead of pp/tg: lookup (prompt lookup, the generation default) or draft (--draft-model's drafts) generates -n greedy tokens (end tokens banned) after each prompt of --prompt-file, plainly and with speculation, alternating, and prints both decode speeds, their ratio (aggregate, median and worst prompt), the draft acceptance and how many texts were identical; off times plain decoding on both sides (a control).")
    var speculative: SpeculativeMode?

    @Option(name: .long, help: "With --speculative draft: the draft model (a path or name as for --model, with the model's tokenizer).")
    var draftModel: String?

    @Option(name: .long, help: "With --speculative: the prompts, as a .jsonl file of objects with a \"prompt\" string (benchmarks/data/grounded-prompts.jsonl), or any other file as one raw-text prompt (tokenized with the model's BOS, no chat template).")
    var promptFile: String?

    @Option(name: .long, help: "With --speculative: write each prompt's token ids and the plain run's generated ids to this file, one JSON line per prompt of the first repetition ({\"prompt\": [...], \"generated\": [...]}), for benchmarks/lookup_replay.py.")
    var saveTokens: String?

    @Flag(name: .long, help: "Print JSON instead of a markdown table.")
    var json = false

    /// The levels of --parallel.
    var parallelLevels: [Int]? {
        parallel.map { $0.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
    }

    func validate() throws {
        if prompt < 0 || generate < 0 || depth < 0 { throw ValidationError("-p, -n and -d must be ≥ 0") }
        if QuantizedKeyDots(rawValue: kvKeyDots) == nil { throw ValidationError("--kv-key-dots takes auto, integer or float") }
        if depth > 0 && parallel != nil { throw ValidationError("-d is not measured with --parallel") }
        if repetitions < 1 { throw ValidationError("-r must be ≥ 1") }
        if speculative != nil {
            if promptFile == nil { throw ValidationError("--speculative needs --prompt-file (the prompts to continue)") }
            if generate < 2 { throw ValidationError("--speculative needs -n ≥ 2") }
            if parallel != nil || depth > 0 { throw ValidationError("--speculative is not measured with --parallel or -d") }
            if (speculative == .draft) != (draftModel != nil) {
                throw ValidationError("--speculative draft needs --draft-model, which only it reads")
            }
        } else if promptFile != nil || saveTokens != nil || draftModel != nil {
            throw ValidationError("--prompt-file, --save-tokens and --draft-model are read by --speculative only")
        }
        if let parallel {
            let levels = parallelLevels ?? []
            guard !levels.isEmpty, levels.count == parallel.split(separator: ",").count,
                levels.allSatisfy({ (1...256).contains($0) })
            else { throw ValidationError("--parallel takes comma-separated sequence counts between 1 and 256, e.g. 1,2,4,8") }
            if prompt < 1 || generate < 1 { throw ValidationError("--parallel needs -p and -n ≥ 1") }
        }
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
        let model: String, architecture: String, pp: Stat?, tg: Stat?, prompt_tokens: Int, generated_tokens: Int
        /// Tokens in the cache before each test (-d).
        let depth: Int
        let peak_rss_bytes: Int, load_seconds: Double, threads: Int, model_bytes: Int, weight_bytes_per_token: Int
        /// What the load did with the repack cache: hit, written, unwritable, disabled or not-needed.
        let repack_cache: String
        /// Seconds per load phase (GGUF: open, tensors, repack, tokenizer).
        let load_phases: [String: Double]
        let kv_cache_bytes: Int, parameters: Int, weight_types: [String: Int], kernel: String
        /// The kernel level in use (KernelLevel.current) and the best this CPU runs.
        let kernel_level: String, cpu_best_level: String, prefill_path: String, activation_bits: String
        /// The GEMM behind f32 products (`BLAS.backend`): `--prefill-path sgemm`, and weights
        /// without an integer kernel multiplied by several rows (e.g. an f16 logits head scoring
        /// every position of `hearth perplexity`).
        let blas: String
        /// What `activation_bits` means on this CPU (``ActivationPrecision/summary(level:)``).
        let activations: String
        /// With --parallel: one entry per level.
        let parallel: [ParallelLevel]?
        /// With --speculative: plain and speculative decoding on the prompts of --prompt-file.
        let speculative: SpeculativeReport?
    }

    /// Batched decoding at one level: N sequences, prompt and aggregate decode speeds.
    struct ParallelLevel: Encodable {
        let sequences: Int
        /// All N prompts' tokens per second.
        let pp: Stat
        /// All N sequences' generated tokens per second.
        let tg: Stat
        let kv_cache_bytes: Int
    }

    // Long: the command from load to report: its three measurements (single sequence, parallel levels,
    // speculative) share the loaded model, pool, the random-token source and the row and progress
    // helpers defined inside, which print rows as tests finish; the report gathers what they measured.
    func run() throws {
        try reportingErrors {
            let threads = workers.threads ?? WorkerPool.defaultThreadCount
            let lm = try model.load(threads: threads, showProgress: !json)
            let pool = WorkerPool(threads: threads)
            var rng = SeededGenerator(seed: 1234)
            let vocab = Int32(lm.options.vocabSize)
            func randomTokens(_ n: Int) -> [Int32] { (0..<n).map { _ in Int32.random(in: 0..<vocab, using: &rng) } }

            // Each run starts from `depth`. A cache is cut back to it, except in sliding-window
            // layers, which no longer hold the window before it: there each run processes the
            // depth again, untimed (as llama-bench does for every run).
            let depthTokens = randomTokens(depth)
            let replaysDepth = depth > 0 && lm.options.slidingWindow != nil
            func toDepth(_ decoder: Decoder) throws {
                if replaysDepth { _ = try decoder.forward(depthTokens, from: 0) }
            }
            func measurePP(_ decoder: Decoder) throws -> Double {
                try toDepth(decoder)
                let tokens = randomTokens(prompt)
                let start = DispatchTime.now()
                _ = try decoder.forward(tokens, from: depth)
                return Double(prompt) / elapsed(since: start)
            }
            func measureTG(_ decoder: Decoder) throws -> Double {
                try toDepth(decoder)
                var token = randomTokens(1)[0]
                let start = DispatchTime.now()
                for i in 0..<generate {
                    _ = try decoder.forward([token], from: depth + i)
                    token = (token &+ 1) % vocab
                }
                return Double(generate) / elapsed(since: start)
            }
            // Rows print as each test finishes (llama-bench's habit), with a progress line on a
            // terminal while it runs; --json prints one object at the end and nothing before.
            let types = lm.weightBytesByType.keys.map(\.rawValue).sorted().joined(separator: "+")
            let size = formatBytes(lm.weightBytesByType.values.reduce(0, +))
            let params = String(format: "%.2f B", Double(lm.parameterCount) / 1e9)
            if !json { emit("| model | size | params | backend | threads | test | t/s |\n|---|---|---|---|---|---|---|\n") }
            func row(_ test: String, _ s: Stat) {
                guard !json else { return }
                emit("| \(lm.architecture) \(types) | \(size) | \(params) | CPU (\(KernelLevel.current.rawValue), a\(kernels.activationBits)) | \(threads) | \(test) | \(String(format: "%.2f ± %.2f", s.tokens_per_second, s.stddev)) |\n")
            }
            /// Runs `body` (warm-up, then the repetitions) under a progress line named `test`.
            func timed<T>(_ test: String, _ body: () throws -> T) rethrows -> [T] {
                let bar = json ? nil : ProgressBar(label: test)
                defer { bar?.finish() }
                let total = repetitions + (noWarmup ? 0 : 1)
                bar?.update(0)
                if !noWarmup { _ = try body(); bar?.update(1 / Double(total)) }
                return try (0..<repetitions).map { index in
                    defer { bar?.update(Double(index + 1 + (noWarmup ? 0 : 1)) / Double(total)) }
                    return try body()
                }
            }
            let at = depth > 0 ? " @ d\(depth)" : ""
            var pp: Stat?
            var tg: Stat?
            var levels: [ParallelLevel]?
            var kvCacheBytes = 0
            var spec: SpeculativeReport?
            if let speculative, let promptFile {
                // A line per run on a terminal (a run of 40 prompts can take an hour), cleared
                // before the rows.
                let bar = json ? nil : ProgressBar(label: "speculative")
                spec = try measureSpeculative(lm, mode: speculative, promptFile: promptFile, threads: threads) {
                    bar?.update($0, detail: $1)
                }
                bar?.finish()
                if let spec, !json {
                    row("tg\(generate) × \(spec.prompts) prompts, speculative off", spec.plain)
                    row("tg\(generate) × \(spec.prompts) prompts, speculative \(spec.mode)", spec.speculative)
                    let ratios = [spec.ratio_aggregate, spec.ratio_median_prompt, spec.ratio_worst_prompt].map { String(format: "%.2f×", $0) }
                    emit("\n\(spec.mode) ÷ off: \(ratios[0]) aggregate, \(ratios[1]) median prompt, \(ratios[2]) worst prompt; "
                        + "\(spec.accepted) of \(spec.drafted) drafted tokens accepted (\(String(format: "%.0f", 100 * spec.acceptance))%); "
                        + "identical texts \(spec.identical_texts) of \(spec.runs.count)\n")
                }
            } else if let parallelLevels {
                levels = try parallelLevels.map { n in
                    let bar = json ? nil : ProgressBar(label: "\(n) seq")
                    bar?.update(0)
                    let level = try measureParallel(lm, sequences: n, pool: pool, random: randomTokens) { bar?.update($0) }
                    bar?.finish()
                    row("pp\(prompt) × \(level.sequences) seq", level.pp)
                    row("tg\(generate) × \(level.sequences) seq (aggregate)", level.tg)
                    return level
                }
                kvCacheBytes = levels?.map(\.kv_cache_bytes).max() ?? 0
            } else {
                let decoder = try makeDecoder(lm, maxBatch: batch, sequences: 1, pool: pool)
                kvCacheBytes = decoder.cache.byteCount
                // The depth, once: each test starts at `depth` (the cache is cut back to it).
                if depth > 0 && !replaysDepth { _ = try decoder.forward(depthTokens, from: 0) }
                if prompt > 0 {
                    pp = Stat(try timed("pp\(prompt)\(at)") { try measurePP(decoder) })
                    if let pp { row("pp\(prompt)\(at)", pp) }
                }
                if generate > 0 {
                    tg = Stat(try timed("tg\(generate)\(at)") { try measureTG(decoder) })
                    if let tg { row("tg\(generate)\(at)", tg) }
                }
            }
            let report = Report(
                model: lm.path.lastPathComponent, architecture: lm.architecture, pp: pp, tg: tg, prompt_tokens: prompt,
                generated_tokens: generate, depth: depth, peak_rss_bytes: peakRSSBytes(), load_seconds: lm.loadSeconds,
                threads: threads, model_bytes: lm.weightBytesByType.values.reduce(0, +),
                weight_bytes_per_token: lm.weightBytesPerToken, repack_cache: lm.repackCacheOutcome.name,
                load_phases: Dictionary(lm.loadPhases.map { ($0.name, $0.seconds) }, uniquingKeysWith: +),
                kv_cache_bytes: kvCacheBytes,
                parameters: lm.parameterCount,
                weight_types: Dictionary(uniqueKeysWithValues: lm.weightBytesByType.map { ($0.key.rawValue, $0.value) }),
                kernel: quantizedKernelName, kernel_level: KernelLevel.current.rawValue,
                cpu_best_level: KernelLevel.best.rawValue, prefill_path: kernels.prefillPath,
                activation_bits: kernels.activationBits, blas: BLAS.backend, activations: kernels.precision.summary(), parallel: levels,
                speculative: spec)
            if json {
                emit(try jsonLine(report))
                return
            }
            emit("\npeak RSS \(formatBytes(report.peak_rss_bytes)), load \(String(format: "%.2f", report.load_seconds)) s (\(lm.loadPhases.map { "\($0.name) \(String(format: "%.2f", $0.seconds))" }.joined(separator: ", ")); repack cache: \(lm.repackCacheOutcome)), KV cache \(formatBytes(report.kv_cache_bytes)) \(kernels.kvType.rawValue)\n")
        }
    }
}

extension Bench {
    /// A decoder of `sequences` slots of d + p + n positions with the command's kernel options.
    func makeDecoder(_ lm: TransformerModel, maxBatch: Int, sequences: Int, pool: WorkerPool) throws -> Decoder {
        let decoder = try Decoder(
            weights: lm.weights, options: lm.options, context: max(1, depth + prompt + generate), maxBatch: maxBatch,
            kvType: kernels.kvType, sequences: sequences, windowedCache: !fullWindowCache, pool: pool)
        decoder.quantizedBatchPath = kernels.batchPath
        decoder.activationPrecision = kernels.precision
        decoder.quantizedKeyDots = QuantizedKeyDots(rawValue: kvKeyDots) ?? .automatic
        return decoder
    }

    /// llama-batched-bench at one level: `sequences` prompts of `prompt` tokens processed
    /// together, then `generate` steps decoding one token of every sequence per step.
    /// `progress` hears the fraction of the level's runs (warm-up included) done after each.
    func measureParallel(
        _ lm: TransformerModel, sequences: Int, pool: WorkerPool, random: (Int) -> [Int32],
        progress: (Double) -> Void = { _ in }
    ) throws -> ParallelLevel {
        let decoder = try makeDecoder(lm, maxBatch: max(batch, sequences), sequences: sequences, pool: pool)
        let vocab = Int32(lm.options.vocabSize)
        func measure() throws -> (pp: Double, tg: Double) {
            var items: [Decoder.BatchItem] = []
            for s in 0..<sequences {
                for (i, token) in random(prompt).enumerated() { items.append(.init(sequence: s, position: i, token: token)) }
            }
            let start = DispatchTime.now()
            var done = 0
            while done < items.count {
                let chunk = Array(items[done..<min(items.count, done + decoder.maxBatch)])
                let ends = chunk.indices.filter { chunk[$0].position == prompt - 1 }
                _ = try decoder.forward(batch: chunk, logitsFor: ends)
                done += chunk.count
            }
            let pp = Double(items.count) / elapsed(since: start)
            var step = (0..<sequences).map { Decoder.BatchItem(sequence: $0, position: prompt, token: random(1)[0]) }
            let all = Array(0..<sequences)
            let decodeStart = DispatchTime.now()
            for _ in 0..<generate {
                _ = try decoder.forward(batch: step, logitsFor: all, generatedRows: step.count)
                for i in step.indices {
                    step[i].position += 1
                    step[i].token = (step[i].token &+ 1) % vocab
                }
            }
            return (pp, Double(sequences * generate) / elapsed(since: decodeStart))
        }
        let total = Double(repetitions + (noWarmup ? 0 : 1))
        if !noWarmup {
            _ = try measure()
            progress(1 / total)
        }
        let runs = try (0..<repetitions).map { index in
            defer { progress(Double(index + 1 + (noWarmup ? 0 : 1)) / total) }
            return try measure()
        }
        return ParallelLevel(
            sequences: sequences, pp: Stat(runs.map(\.pp)), tg: Stat(runs.map(\.tg)), kv_cache_bytes: decoder.cache.byteCount)
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
