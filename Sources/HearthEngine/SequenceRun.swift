import Foundation
import HearthConstraints
import HearthKernels
import HearthTokenizers

/// The sampling side of one sequence: sampler, detokenizer, stop strings and counts. The
/// scheduler feeds it the logits after each step of its sequence.
struct SequenceRun {
    let parameters: GenerationParameters
    var sampler: Sampler
    var matcher: ConstraintMatcher?
    var mask: [UInt64] = []
    var detokenizer: StreamingDetokenizer
    /// Prompt and generated tokens.
    var history: [Int32]
    var generatedCounts: [Int32: Int] = [:]
    /// Set for the step whose token opened a reasoning block under a constraint (the matcher
    /// does not see it).
    var matcherWaits = false
    /// Set when ``headMask()`` filled ``mask`` for the next step: ``next(_:eos:context:onToken:)``
    /// takes it as it is.
    var maskReady = false
    /// Generated text not yet emitted (held back for stop strings).
    var text = ""
    var summary: GenerationSummary
    var decodeStart = DispatchTime.now()
    /// The reasoning block's state (``GenerationParameters/reasoning``).
    var reasoning: ReasoningRun?
    /// Set when a constrained output fell into a loop (``RepetitionRule``): the completion
    /// token count by which the output must be complete.
    var windDownBy: Int?

    enum Outcome {
        /// Feed this token and call again with the logits it produces.
        case feed(Int32)
        case finished
    }

    init(prompt: [Int32], parameters: GenerationParameters, tokenizer: any Tokenizer) {
        self.parameters = parameters
        sampler = Sampler(options: parameters.sampling, normalizes: parameters.logprobs || parameters.topLogprobs > 0)
        matcher = parameters.constraint.map { constraint in
            var matcher = ConstraintMatcher(constraint)
            if !parameters.constraintPrefix.isEmpty { matcher.advance(bytes: parameters.constraintPrefix) }
            return matcher
        }
        detokenizer = StreamingDetokenizer(
            tokenizer: tokenizer, stripLeadingSpace: parameters.stripLeadingSpace && parameters.constraint == nil)
        history = prompt
        reasoning = parameters.reasoning.map { ReasoningRun($0, tokenizer: tokenizer) }
        summary = GenerationSummary(
            finishReason: .length, promptTokens: prompt.count, cachedPromptTokens: 0, completionTokens: 0,
            prefillSeconds: 0, decodeSeconds: 0)
    }

    // Long: the per-token path of generation (budget, sampling, stop strings, stop tokens, logprobs,
    // emission) in the order each token goes through it; it runs once per generated token for every
    // sequence, and its steps share the token's state.
    /// Samples the next token from `logits`, emits it and says whether to go on.
    mutating func next(
        _ logits: UnsafeBufferPointer<Float>, eos: Set<Int32>, context: Int, onToken: (GeneratedToken) -> Void
    ) -> Outcome {
        guard summary.completionTokens < parameters.maxTokens else { return endOfBudget() }
        var allowed: [UInt64]? = nil
        // A reasoning block is free text: the constraint waits for the answer (`grammar`).
        let phase = reasoning?.splitter.phase ?? .answer
        let forced = reasoning?.nextForced()
        let grammar = matcher != nil && forced == nil && phase != .reasoning
        if grammar {
            // In place: a copy would duplicate the matcher's mask cache each step.
            if !maskReady { matcher?.fillMask(&mask) }
            maskReady = false
            reasoning?.adjust(&mask, phase: phase)
            if !mask.contains(where: { $0 != 0 }) {
                // Complete, with no end-of-sequence token to say so (or no token can go on).
                summary.finishReason = .stop
                return .finished
            }
            allowed = mask
        } else if forced == nil, phase != .undecided {
            allowed = reasoning?.allowed(in: phase, vocabulary: logits.count)
        }
        var id = sampler.sample(logits, recent: history[...], generated: generatedCounts, allowed: allowed)
        if let forced {
            id = forced
        } else if phase == .reasoning, eos.contains(id), let close = reasoning?.beginClosing() {
            id = close  // the end of the reply inside the block: close it, an answer follows
        }
        if grammar, phase == .undecided {
            if id == reasoning?.control.format.openID {
                matcherWaits = true
            } else {
                text += reasoning?.splitter.decideAnswer() ?? ""
            }
        }
        if grammar, !matcherWaits, parameters.finishInBudget, !eos.contains(id) {
            id = withinBudget(id, logits, context: context)
        }
        if grammar, !matcherWaits { matcher?.advance(id) }
        matcherWaits = false
        generatedCounts[id, default: 0] += 1
        var token = GeneratedToken(id: id, text: "", logprob: .nan, topLogprobs: [])
        if sampler.normalizes {
            let normalizer = sampler.normalizerOfLastLogits()  // from the sampler's pass over the same logits
            token.logprob = LogProbabilities.of(id, in: logits, normalizer: normalizer)
            token.topLogprobs = LogProbabilities.top(parameters.topLogprobs, in: logits, normalizer: normalizer)
        }
        summary.completionTokens += 1
        if summary.completionTokens == 1 { decodeStart = DispatchTime.now() }

        if eos.contains(id) {
            var rest = detokenizer.flush()
            if reasoning != nil {
                let (thought, said) = reasoning?.split(rest, id: id, phase: phase, forced: forced != nil, end: true, summary: &summary) ?? ("", rest)
                (token.reasoning, rest) = (thought, said)
            }
            token.text = text + rest
            onToken(token)
            summary.finishReason = .stop
            return .finished
        }
        var piece = detokenizer.push(id)
        if reasoning != nil {
            let grammarWaits = matcher != nil
            let (thought, said) =
                reasoning?.split(piece, id: id, phase: phase, forced: forced != nil, end: false, summary: &summary, constrained: grammarWaits)
                ?? ("", piece)
            (token.reasoning, piece) = (thought, said)
            token.endsReasoning = reasoning?.endedNow == true
            token.inReasoning = reasoning?.lastInBlock == true
        }
        text += piece
        let current = text
        if let range = parameters.stop.lazy.compactMap({ current.range(of: $0) }).first {
            token.text = String(text[..<range.lowerBound])
            onToken(token)
            summary.finishReason = .stop
            return .finished
        }
        // Emit all but a tail that could still begin a stop string.
        let hold = heldBackCount(text, stops: parameters.stop)
        token.text = String(text.dropLast(hold))
        text = String(text.suffix(hold))
        onToken(token)

        history.append(id)
        if grammar, parameters.finishInBudget, windDownBy == nil,
            RepetitionRule.isLooping(history.suffix(summary.completionTokens)), var m = matcher
        {
            windDownBy = summary.completionTokens + m.bytesToComplete() + RepetitionRule.margin
            matcher = m
            summary.repetitionEnded = true
        }
        if windDownBy != nil, matcher?.isAccepting == true {
            summary.finishReason = .stop  // wound down: complete, so it ends here
            return .finished
        }
        if summary.completionTokens == parameters.maxTokens { return endOfBudget() }
        if history.count >= context { return endOfBudget() }
        return .feed(id)
    }

    /// The tokens the next step may choose, when only those need logits: a grammar constrains
    /// the output and nothing reads the others (no log-probabilities asked, no reasoning block,
    /// the grammar not waiting). The mask is kept for that step's ``next(_:eos:context:onToken:)``
    /// (the matcher does not move in between). Nil: every token's logit is needed.
    mutating func headMask() -> [UInt64]? {
        guard matcher != nil, reasoning == nil, !sampler.normalizes, !matcherWaits,
            summary.completionTokens < parameters.maxTokens
        else { return nil }
        matcher?.fillMask(&mask)
        maskReady = true
        return mask
    }

    /// The tokens ran out: `.stop` when a constraint's output is complete (it may end here),
    /// else `.length`.
    mutating func endOfBudget() -> Outcome {
        summary.finishReason = matcher?.isAccepting == true ? .stop : .length
        return .finished
    }

    /// `id`, or — when the constrained output could not be completed after it in the tokens
    /// left (counting a byte a token, which every vocabulary with byte tokens can always do) —
    /// the sampler's choice among the tokens that keep a completion within reach (see
    /// ``GenerationParameters/finishInBudget``). Costs one lookup per token until it acts.
    mutating func withinBudget(_ id: Int32, _ logits: UnsafeBufferPointer<Float>, context: Int) -> Int32 {
        guard var m = matcher else { return id }
        // Tokens after this one: the end of sequence needs none (a complete output ends `.stop`).
        var left = min(parameters.maxTokens - summary.completionTokens, context - history.count) - 1
        if let windDownBy { left = min(left, windDownBy - summary.completionTokens - 1) }
        defer { matcher = m }
        guard let after = m.bytesToComplete(after: id), after > left else { return id }
        var feasible: [UInt64] = []
        m.fillFeasibleMask(&feasible, within: left)
        guard feasible.contains(where: { $0 != 0 }) else { return id }  // out of reach either way: cut
        summary.budgetShapedTokens += 1
        return sampler.sample(logits, recent: history[...], generated: generatedCounts, allowed: feasible)
    }

    /// The summary, with the decode time filled in.
    func finish() -> GenerationSummary {
        var result = summary
        if result.completionTokens > 0 {
            result.decodeSeconds = Double(DispatchTime.now().uptimeNanoseconds - decodeStart.uptimeNanoseconds) / 1e9
        }
        return result
    }

    func heldBackCount(_ text: String, stops: [String]) -> Int {
        var hold = 0
        for stop in stops {
            for length in stride(from: min(stop.count - 1, text.count), to: 0, by: -1)
            where text.hasSuffix(stop.prefix(length)) {
                hold = max(hold, length)
                break
            }
        }
        return hold
    }
}

func seconds(since start: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
}

/// A thread-safe one-way flag (a request's cancellation).
/// Counts the choices of one group down to zero (their ends come from the scheduler thread).
final class ChoiceCountdown: @unchecked Sendable {
    // `@unchecked Sendable`: `remaining` is only touched under `lock`.
    let lock = NSLock()
    var remaining: Int

    init(_ count: Int) { remaining = count }

    /// One choice ended; true when it was the last.
    func endOne() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        remaining -= 1
        return remaining == 0
    }
}

public final class CancellationFlag: @unchecked Sendable {
    // `@unchecked Sendable`: the value is only read and written under `lock`.
    let lock = NSLock()
    var value = false

    /// A flag that is not set.
    public init() {}

    /// Sets the flag (for good).
    public func set() {
        lock.lock()
        value = true
        lock.unlock()
    }

    /// Whether the flag is set.
    public var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}
