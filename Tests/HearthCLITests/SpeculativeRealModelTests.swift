import Foundation
import HearthTestSupport
import Testing

/// Speculative decoding on the default model through the release binary (`hearth generate
/// --json`, as RealModelTests): greedy output with `--speculative lookup` equals `off` up to the
/// first step whose two best tokens are within 0.1 nats (a batched step sums in another order),
/// with drafts accepted; seeded sampling draws the same tokens, and over independent seeds the
/// generated tokens' frequencies agree with plain sampling's by a two-sample χ² test.
@Suite(.enabled(if: RealModel.available, "the default model or the release binary is not installed"))
struct SpeculativeRealModelTests {
    struct Line: Decodable {
        struct Alternative: Decodable { let id: Int32, logprob: Float }
        let id: Int32?
        let top_logprobs: [Alternative]?
        let drafted_tokens: Int?
        let accepted_draft_tokens: Int?
    }

    /// Input-grounded prompts (the reply repeats the prompt's text).
    static let groundedPrompts = [
        "Correct the spelling in this sentence and return it: The quick brown fox jumpd over the lazy dog and ran thru the forest to it's home.",
        "Repeat this list exactly, one item per line: apples, bread, cheese, dates, eggs, flour, grapes, honey.",
        "Rename the variable total to sum in this code and return the code:\nvar total = 0\nfor x in values { total += x }\nprint(total)",
    ]

    /// Runs `hearth generate --json` and returns the token lines and the summary line.
    func generate(_ prompt: String, _ mode: String, _ extra: [String]) throws -> (tokens: [Line], done: Line) {
        let output = try RealModel.run(
            ["generate", "--model", RealModel.model, "--prompt", prompt, "--json", "--speculative", mode,
             "--ctx", "1024", "-t", "2"] + extra)
        let lines = try output.split(separator: "\n").map {
            try JSONDecoder().decode(Line.self, from: Data($0.utf8))
        }
        let done = try #require(lines.last)
        return (lines.filter { $0.id != nil }, done)
    }

    /// With 16-bit activations, and with `mixed` (8-bit prompts on AVX-512 VNNI): verified
    /// drafts are generated rows, multiplied at 16 bits like the single token of a plain step,
    /// so `mixed` keeps the equality too.
    @Test(arguments: ["16", "mixed"])
    func greedyEqualsPlainGreedyBeforeTheFirstNearTie(bits: String) throws {
        var compared = 0, accepted = 0
        for text in Self.groundedPrompts {
            let common = ["--temperature", "0", "--max-tokens", "48", "--activation-bits", bits]
            let plain = try generate(text, "off", common + ["--top-logprobs", "2"])
            let fast = try generate(text, "lookup", common)
            let margins = plain.tokens.map { line -> Float in
                let top = (line.top_logprobs ?? []).map(\.logprob)
                return top.count == 2 ? top[0] - top[1] : .infinity
            }
            let clear = margins.firstIndex { $0 < 0.1 } ?? margins.count
            #expect(fast.tokens.prefix(clear).map(\.id) == plain.tokens.prefix(clear).map(\.id), "\(text)")
            compared += clear
            accepted += fast.done.accepted_draft_tokens ?? 0
            #expect(plain.done.drafted_tokens == 0)
        }
        #expect(compared >= 60)
        #expect(accepted >= 20)
    }

    @Test func samplingKeepsItsDrawsAndItsDistribution() throws {
        let text = Self.groundedPrompts[1]
        var same = 0, accepted = 0
        var counts: [[Int32: Int]] = [[:], [:]]
        let runs = 12
        func sample(_ mode: String, _ seed: Int) throws -> (ids: [Int32], accepted: Int) {
            let r = try generate(text, mode, ["--temperature", "0.8", "--seed", String(seed), "--max-tokens", "32"])
            return (r.tokens.compactMap(\.id), r.done.accepted_draft_tokens ?? 0)
        }
        for seed in 0..<runs {
            let plain = try sample("off", seed)
            let fast = try sample("lookup", seed)
            if plain.ids == fast.ids { same += 1 }
            accepted += fast.accepted
            // Independent samples for the distribution test: plain on this seed, speculative on another.
            let other = try sample("lookup", 1000 + seed)
            for t in plain.ids { counts[0][t, default: 0] += 1 }
            for t in other.ids { counts[1][t, default: 0] += 1 }
        }
        // A batched step's logits differ from a one-row step's in the last digits the kernels
        // keep (~1e-3 here), so a draw that lands that close to a boundary of the cumulative
        // distribution (or of top-p's cut) goes to a neighbour, and the runs part there: measured
        // 10 of 12 seeds identical. The distribution test below is the assertion that matters.
        #expect(same >= runs / 2, "\(same) of \(runs) seeds drew the same tokens")
        #expect(accepted >= 20)
        let statistic = Self.chiSquared(counts[0], counts[1])
        #expect(statistic.p > 0.001, "χ² \(statistic.value) with \(statistic.df) degrees of freedom")
    }

    /// Two-sample χ² over the categories with at least 5 expected in both samples (the rest pooled).
    static func chiSquared(_ a: [Int32: Int], _ b: [Int32: Int]) -> (value: Double, df: Int, p: Double) {
        let na = Double(a.values.reduce(0, +)), nb = Double(b.values.reduce(0, +))
        var cells: [(Double, Double)] = []
        var rest = (0.0, 0.0)
        for key in Set(a.keys).union(b.keys) {
            let x = Double(a[key] ?? 0), y = Double(b[key] ?? 0)
            if (x + y) * min(na, nb) / (na + nb) >= 5 { cells.append((x, y)) } else { rest = (rest.0 + x, rest.1 + y) }
        }
        if rest.0 + rest.1 > 0 { cells.append(rest) }
        var value = 0.0
        for (x, y) in cells {
            let total = x + y
            let ea = total * na / (na + nb), eb = total * nb / (na + nb)
            value += (x - ea) * (x - ea) / ea + (y - eb) * (y - eb) / eb
        }
        let df = max(1, cells.count - 1)
        return (value, df, chiSquaredSurvival(value, df))
    }

    /// P(χ²_df > x) by the Wilson–Hilferty normal approximation (ample for a 0.001 threshold).
    static func chiSquaredSurvival(_ x: Double, _ df: Int) -> Double {
        let k = Double(df)
        let z = (pow(x / k, 1.0 / 3) - (1 - 2 / (9 * k))) / (2 / (9 * k)).squareRoot()
        return 0.5 * erfc(z / 2.0.squareRoot())
    }
}
