import Foundation
import ArgumentParser
import HearthEngine

/// `hearth bench --speculative lookup --prompt-file F`: greedy generation on real prompts with
/// speculative decoding and without it, alternating, in one run.
extension Bench {
    /// One prompt's pair of runs in one repetition.
    struct SpeculativeRun: Encodable {
        let prompt: Int
        /// Generated tokens after the first (the decode steps' share) and their seconds.
        let plain_tokens: Int, plain_seconds: Double
        let speculative_tokens: Int, speculative_seconds: Double
        let drafted: Int, accepted: Int
        /// Whether both runs generated the same tokens (greedy: they should, up to a near-tie).
        let identical: Bool
    }

    /// What `--speculative` measured: decode tokens/s without and with speculation over all
    /// prompts and repetitions, their ratio (aggregate, median prompt, worst prompt), the draft
    /// acceptance and how many texts were identical.
    struct SpeculativeReport: Encodable {
        let mode: String, prompts: Int, prompt_tokens: [Int], generated_tokens: Int
        let plain: Stat, speculative: Stat
        let ratio_aggregate: Double, ratio_median_prompt: Double, ratio_worst_prompt: Double
        let drafted: Int, accepted: Int, acceptance: Double
        let identical_texts: Int, runs: [SpeculativeRun]
    }

    /// The prompts of `--prompt-file`: a `.jsonl` file's `"prompt"` fields, one per line (the
    /// format of `benchmarks/data/grounded-prompts.jsonl`), or any other file's whole text.
    func speculativePrompts(_ path: String) throws -> [String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        guard path.hasSuffix(".jsonl") else { return [text] }
        struct Line: Decodable { let prompt: String }
        var prompts: [String] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: true).enumerated() {
            do {
                prompts.append(try JSONDecoder().decode(Line.self, from: Data(line.utf8)).prompt)
            } catch {
                throw EngineError(.invalidOption, "\(path) line \(number + 1): expected a JSON object with a \"prompt\" string")
            }
        }
        guard !prompts.isEmpty else { throw EngineError(.invalidOption, "\(path) holds no prompt") }
        return prompts
    }

    // Long: plain and speculative runs alternate per prompt over one model, warm-up first; the
    // accumulators and the per-prompt records they share make up the report.
    /// Greedy generation of `generate` tokens (end tokens banned, so every run has the same
    /// length) after each prompt, plain and with `mode`, alternating per prompt; one warm-up of
    /// the first prompt, then `repetitions` rounds. `progress` hears, before each run, the
    /// fraction of runs done and what runs next ("prompt 3 of 40, lookup").
    func measureSpeculative(
        _ lm: TransformerModel, mode: SpeculativeMode, promptFile: String, threads: Int,
        progress: (_ fraction: Double, _ step: String) -> Void = { _, _ in }
    ) throws -> SpeculativeReport {
        let texts = try speculativePrompts(promptFile)
        let prompts = try texts.map { try lm.tokenizer.encode($0, addSpecialTokens: true) }
        let longest = prompts.map(\.count).max() ?? 0
        let draft = try draftModel.map {
            try TransformerModel(path: try ModelNames.path($0), threads: threads, repackCache: model.source.repackCache)
        }
        let generator = try Generator(
            model: lm, context: longest + generate + 1, threads: threads, batch: batch, kvType: kernels.kvType,
            windowedCache: !fullWindowCache, draftModel: draft)
        generator.quantizedBatchPath = kernels.batchPath
        generator.activationPrecision = kernels.precision
        func once(_ prompt: [Int32], _ speculative: SpeculativeMode) throws -> (ids: [Int32], summary: GenerationSummary) {
            var parameters = GenerationParameters()
            parameters.maxTokens = generate
            parameters.sampling.temperature = 0
            for id in lm.eosIDs { parameters.sampling.logitBias[id] = -100 }
            parameters.speculative = speculative
            parameters.logprobs = false  // as `hearth chat` and a server request without logprobs
            var ids: [Int32] = []
            // From an empty cache: a prompt cached but for its last token would feed that token as a
            // decode row (16 bits under the default `outliers`) where the other run fed it as a prompt row.
            generator.reset()
            let summary = try generator.run(prompt: prompt, parameters: parameters) { ids.append($0.id) }
            return (ids, summary)
        }
        // Runs in all: the warm-up pair, then a pair per prompt per repetition.
        let total = Double(2 * (1 + repetitions * prompts.count))
        var done = 0.0
        func step(_ what: String) {
            progress(done / total, what)
            done += 1
        }
        if let first = prompts.first {
            step("warm-up, off")
            _ = try once(first, .off)
            step("warm-up, \(mode.rawValue)")
            _ = try once(first, mode)
        }
        var runs: [SpeculativeRun] = []
        var saved: [String] = []
        for repetition in 0..<repetitions {
            let round = repetitions > 1 ? " (round \(repetition + 1) of \(repetitions))" : ""
            for (index, prompt) in prompts.enumerated() {
                step("prompt \(index + 1) of \(prompts.count), off\(round)")
                let plain = try once(prompt, .off)
                if saveTokens != nil, repetition == 0 {
                    struct Line: Encodable { let prompt: [Int32], generated: [Int32] }
                    saved.append(String(decoding: try JSONEncoder().encode(Line(prompt: prompt, generated: plain.ids)), as: UTF8.self))
                }
                step("prompt \(index + 1) of \(prompts.count), \(mode.rawValue)\(round)")
                let fast = try once(prompt, mode)
                runs.append(
                    SpeculativeRun(
                        prompt: index, plain_tokens: max(0, plain.summary.completionTokens - 1),
                        plain_seconds: plain.summary.decodeSeconds,
                        speculative_tokens: max(0, fast.summary.completionTokens - 1),
                        speculative_seconds: fast.summary.decodeSeconds, drafted: fast.summary.draftedTokens,
                        accepted: fast.summary.acceptedDraftTokens, identical: plain.ids == fast.ids))
            }
        }
        if let saveTokens {
            do {
                try (saved.joined(separator: "\n") + "\n").write(toFile: saveTokens, atomically: true, encoding: .utf8)
            } catch {
                throw ValidationError("--save-tokens: cannot write \(saveTokens): \(error.localizedDescription)")
            }
        }
        // Decode tokens/s of a set of runs, plain and speculative (all their tokens ÷ all their time).
        func rates(_ some: [SpeculativeRun]) -> (plain: Double, fast: Double) {
            func rate(_ tokens: Int, _ seconds: Double) -> Double { seconds > 0 ? Double(tokens) / seconds : 0 }
            return (
                rate(some.map(\.plain_tokens).reduce(0, +), some.map(\.plain_seconds).reduce(0, +)),
                rate(some.map(\.speculative_tokens).reduce(0, +), some.map(\.speculative_seconds).reduce(0, +))
            )
        }
        // Per repetition, all prompts together: the spread of the aggregate.
        let rounds = (0..<repetitions).map { r in rates(Array(runs[(r * prompts.count)..<((r + 1) * prompts.count)])) }
        // Per prompt, over the repetitions: its ratio.
        let ratios = (0..<prompts.count).map { p -> Double in
            let (plain, fast) = rates(runs.filter { $0.prompt == p })
            return plain > 0 ? fast / plain : 0
        }.sorted()
        let (plainAll, fastAll) = rates(runs)
        let drafted = runs.map(\.drafted).reduce(0, +), accepted = runs.map(\.accepted).reduce(0, +)
        let median = ratios.isEmpty ? 0 : ratios.count % 2 == 1
            ? ratios[ratios.count / 2] : (ratios[ratios.count / 2 - 1] + ratios[ratios.count / 2]) / 2
        return SpeculativeReport(
            mode: mode.rawValue, prompts: prompts.count, prompt_tokens: prompts.map(\.count), generated_tokens: generate,
            plain: Stat(rounds.map(\.plain)), speculative: Stat(rounds.map(\.fast)),
            ratio_aggregate: plainAll > 0 ? fastAll / plainAll : 0, ratio_median_prompt: median,
            ratio_worst_prompt: ratios.first ?? 0, drafted: drafted, accepted: accepted,
            acceptance: drafted > 0 ? Double(accepted) / Double(drafted) : 0,
            identical_texts: runs.filter(\.identical).count, runs: runs)
    }
}
