/// How a generation proposes tokens for the model to verify several at a time (speculative
/// decoding). Verified tokens are exactly the tokens plain decoding would sample: each drafted
/// token is accepted only when the sampler, run on the model's logits at its position, picks
/// that very token, so greedy output is plain greedy output and sampled output keeps its
/// distribution (and, with a seed, its draws).
public enum SpeculativeMode: String, Sendable, CaseIterable, Codable {
    /// Prompt lookup: drafts are the tokens that followed the earlier occurrence (in the prompt
    /// or the reply so far) of the sequence's last token whose preceding tokens match the
    /// sequence's own longest. Costs nothing when nothing repeats; pays on summaries,
    /// extraction, rewrites and edits of a given text.
    case lookup
    /// A draft model (``Generator/init(model:context:threads:batch:kvType:sequences:windowedCache:draftModel:)``,
    /// `--draft-model`): a smaller model with the same tokenizer proposes its most likely next
    /// tokens, one batched step of it per drafted position. Pays where the draft model's
    /// steps are much cheaper than the model's and it agrees with the model often; needs a
    /// generator with a draft model. Where the text repeats at least
    /// 8 tokens of itself (`Generator.copiedMatch`), prompt lookup drafts instead (free).
    case draft
    /// Plain decoding: one token per step.
    case off
}

/// Prompt-lookup drafting: the draft follows the earlier occurrence of the sequence's last
/// token whose preceding tokens match the sequence's own longest (up to ``longest``, at least
/// ``shortest``; the latest such occurrence on ties), among the latest ``occurrencesSearched``
/// occurrences of that token. Each position links to the previous occurrence of its token,
/// updated as the sequence grows, so a lookup walks a bounded chain however long the context is.
///
/// Why the longest match rather than the latest n-gram of 4, 3 or 2 tokens, and why down to one
/// token: on the 24 grounded prompts of `benchmarks/data/grounded-prompts.jsonl` (the default
/// model's greedy replies, replayed offline against the measured cost of each step width,
/// `benchmarks/lookup_replay.py --costs s21`) the 4-, 3- or 2-gram took 2,106 verification steps
/// for 6,120 tokens (modelled 1.91× plain), the longest match down to 2 tokens 1,994 (2.15×) and
/// down to 1 token 1,874 (2.23×). A one-token match drafts on any repeated token, but its
/// acceptance is its own (``rateClass(_:)``), so it drafts only while it pays.
struct PromptLookup {
    /// The longest and shortest suffixes matched (the longest found is used).
    static let longest = 32
    static let shortest = 1
    /// Occurrences of the last token compared, latest first.
    static let occurrencesSearched = 64

    /// previous[i]: the latest position before i holding history[i]'s token, or −1.
    private var previous: [Int] = []
    /// Each token's latest indexed position.
    private var latest: [Int32: Int] = [:]

    /// Up to `limit` tokens that followed the occurrence described above (none when no earlier
    /// occurrence matches at least ``shortest`` tokens), and the length of the suffix matched
    /// (0 when none): drafts behind longer matches are accepted more often, and the generator
    /// keeps their rates apart (``rateClass(_:)``).
    mutating func match(_ history: [Int32], limit: Int) -> (drafts: [Int32], length: Int) {
        while previous.count < history.count {
            let i = previous.count, token = history[i]
            previous.append(latest[token] ?? -1)
            latest[token] = i
        }
        let count = history.count
        guard limit > 0, count > Self.shortest else { return ([], 0) }
        var best = (length: 0, follow: -1)
        var p = previous[count - 1], searched = 0
        while p >= 0, searched < Self.occurrencesSearched {
            searched += 1
            var m = 1
            while m < Self.longest, p - m >= 0, history[p - m] == history[count - 1 - m] { m += 1 }
            if m > best.length { best = (m, p + 1) }
            if m == Self.longest { break }
            p = previous[p]
        }
        guard best.length >= Self.shortest, best.follow >= 0 else { return ([], 0) }
        return (Array(history[best.follow..<min(count, best.follow + limit)]), best.length)
    }

    /// The class whose acceptance rate a match of `length` tokens shares: 1, 2, 3 and 4 each their
    /// own, 5–7 one, 8 and longer one.
    static func rateClass(_ length: Int) -> Int { length <= 4 ? max(0, length) : length < 8 ? 5 : 8 }

    /// Rate classes (``rateClass(_:)`` values are below this).
    static let rateClasses = 9
}

/// What one decode step costs by the number of rows it verifies, from the steps the generator
/// has timed (exponential forgetting), so the draft length follows what this machine, model and
/// batch actually pay for a row.
///
/// The cost is a staircase, not a line: the batched kernels multiply each weight tile against
/// two, four or eight rows per pass, so on the default model a 2-row step costs what a 1-row step
/// does, 3 rows nearly what 4 do, and 5–8 rows about the same (measured on this machine kind:
/// 10.4, 10.1, 14.6, 15.3, 22.6, 22.6, 27.6 ms for 1, 2, 3, 4, 5, 6, 8 rows). A line fitted
/// through it prices 3 rows too high next to 4 and 8 too low next to 5: drafting by it took
/// `benchmarks/lookup_replay.py --costs s21` 2.03× plain on the 24 grounded prompts where the same
/// drafts priced by each width's cost took 2.23×. So each width up to ``widths`` keeps its own
/// mean, blended with the line (one pseudo-step of it); a width's evidence fades while other
/// widths are timed (``staleness`` per step), so a width priced out by a few slow steps (a page
/// fault, another process) returns to the line and gets re-measured rather than staying out for
/// good; widths never timed take the line (a prior fraction of the step per row before two
/// widths are seen); and no width is priced above a wider one's measured mean (a step could
/// always do the wider one).
struct StepCosts {
    /// The prior cost of one more row, as a fraction of a one-row step.
    static let priorRowShare = 0.3
    /// Widths (rows) whose steps are averaged on their own.
    static let widths = 64
    private static let forgetting = 0.97
    /// What every width's evidence keeps per step timed at another width.
    static let staleness = 0.995
    private var n = 0.0, sumR = 0.0, sumRR = 0.0, sumT = 0.0, sumRT = 0.0
    /// Per width: the forgetting-weighted count of its timed steps and the sum of their seconds.
    private var widthWeight = [Double](repeating: 0, count: widths + 1)
    private var widthSeconds = [Double](repeating: 0, count: widths + 1)

    /// Records a decode step of `rows` rows that took `seconds`.
    mutating func record(rows: Int, seconds: Double) {
        guard seconds.isFinite, seconds > 0, rows > 0 else { return }
        let f = Self.forgetting, r = Double(rows)
        n = f * n + 1
        sumR = f * sumR + r
        sumRR = f * sumRR + r * r
        sumT = f * sumT + seconds
        sumRT = f * sumRT + r * seconds
        for w in widthWeight.indices where w != rows && widthWeight[w] > 0 {
            widthWeight[w] *= Self.staleness
            widthSeconds[w] *= Self.staleness
        }
        if rows <= Self.widths {
            widthWeight[rows] = f * widthWeight[rows] + 1
            widthSeconds[rows] = f * widthSeconds[rows] + seconds
        }
    }

    /// The fitted line (a, b) of t(r) = a + b·r, or nil before any step was timed.
    var line: (a: Double, b: Double)? {
        guard n > 0 else { return nil }
        let meanR = sumR / n, meanT = sumT / n
        let varR = sumRR / n - meanR * meanR
        var b = meanT / meanR * Self.priorRowShare
        if varR > 0.05 { b = max(0, (sumRT / n - meanR * meanT) / varR) }
        return (max(meanT - b * meanR, 1e-9), b)
    }

    /// Seconds a step of `rows` rows takes by the timed steps (relative figures when nothing was timed).
    func seconds(rows: Int) -> Double {
        guard let (a, b) = line else { return 1 + Self.priorRowShare * Double(rows - 1) }
        let fitted = a + b * Double(rows)
        guard rows > 0, rows <= Self.widths else { return fitted }
        // The width's own mean, with the line as one pseudo-step.
        var estimate = (widthSeconds[rows] + fitted) / (widthWeight[rows] + 1)
        for wider in stride(from: rows + 1, through: Self.widths, by: 1) where widthWeight[wider] >= 1 {
            estimate = min(estimate, widthSeconds[wider] / widthWeight[wider])
        }
        return estimate
    }
}

/// One sequence's drafting state: how often its drafted tokens are accepted (a per-position
/// acceptance rate, counts decayed so it follows the text), from which the generator picks
/// the draft length that maximises tokens per second against ``StepCosts``. When no length
/// pays, drafting pauses for a number of steps that doubles with each such pause in a row (up
/// to ``longestPause``), after which the rate is pulled halfway back to the prior and the next
/// step drafts at least one token (a probe: whether the text has become predictable again). A
/// sequence's first decision probes too, so a draft source whose prior rate would not pay (a
/// draft model's steps cost something) still gets measured.
struct DraftControl {
    static let longestDraft = 16
    static let longestPause = 64
    private static let prior = 0.5, priorWeight = 1.0, decay = 0.8

    private var accepted = 0.0, tried = 0.0
    private var pause = 0, pauses = 0
    /// Whether the next decision drafts at least one token (the first, and the first after a pause).
    private var probe = true

    /// The estimated chance that a drafted token is accepted, given those before it were.
    var acceptance: Double { (accepted + Self.prior * Self.priorWeight) / (tried + Self.priorWeight) }

    /// Tokens a verification of `k` drafts is expected to yield (the drafts accepted plus the
    /// model's own next token): 1 + α + … + α^k.
    static func expectedTokens(_ k: Int, acceptance α: Double) -> Double {
        var sum = 1.0, term = 1.0
        for _ in 0..<max(0, k) {
            term *= α
            sum += term
        }
        return sum
    }

    /// The number of tokens to draft this step, at most `limit`, when `others` rows decode
    /// beside this sequence: the length with the most tokens per second by `costs` (and
    /// `draftSeconds` for each drafted token: a draft model's step; prompt lookup costs
    /// nothing), or 0 when none beats not drafting (counts a paused step).
    mutating func length(limit: Int, others: Int, costs: StepCosts, draftSeconds: Double = 0) -> Int {
        if pause > 0 {
            pause -= 1
            if pause == 0 {
                accepted *= 0.5
                tried *= 0.5
                probe = true
            }
            return 0
        }
        let rows = others + 1
        let plain = Double(rows) / costs.seconds(rows: rows)
        var best = (k: 0, rate: plain)
        for k in stride(from: 1, through: min(limit, Self.longestDraft), by: 1) {
            let rate =
                (Double(others) + Self.expectedTokens(k, acceptance: acceptance))
                / (costs.seconds(rows: rows + k) + Double(k) * draftSeconds)
            if rate > best.rate { best = (k, rate) }
        }
        if best.k == 0 && probe && limit > 0 {
            probe = false
            return 1
        }
        probe = false
        if best.k == 0 {
            pauses += 1
            pause = min(Self.longestPause, 2 << min(pauses, 5))
        }
        return best.k
    }

    /// Records one verification: `drafted` tokens proposed, `accepted` of them taken.
    mutating func record(drafted: Int, accepted taken: Int) {
        guard drafted > 0 else { return }
        probe = false
        accepted = Self.decay * accepted + Double(taken)
        tried = Self.decay * tried + Double(min(taken + 1, drafted))
        if taken > 0 { pauses = 0 }
    }
}
