import HearthTokenizers

/// One sequence's reasoning block (``GenerationParameters/reasoning``): the text splitter, the
/// closing sequence being forced, and the count of the block's tokens.
struct ReasoningRun {
    let control: ReasoningControl
    var splitter: ReasoningSplitter
    /// Tokens to force next (the closing sequence, or its separator after a closing tag the
    /// model wrote under a constraint).
    private var forced: ArraySlice<Int32> = []
    /// Whether the closing sequence has begun.
    private var closing = false
    /// Tokens of the block so far (opening tag, reasoning, closing sequence).
    private var count = 0
    /// Tokens of an undecided start (white space, a split opening tag): the block's if it opens.
    private var undecided = 0
    /// Whether the block closed with the last token split.
    private(set) var endedNow = false
    /// Whether the last token split belongs to the block (tag, reasoning, closing sequence).
    private(set) var lastInBlock = false
    /// The text a tag token stands for when the detokenizer leaves it out (a tag marked special).
    private let silentTags: [Int32: String]
    /// Every token but the opening tag, and every token but both tags (built on first use).
    private var openingBanned: [UInt64] = []
    private var tagsBanned: [UInt64] = []

    init(_ control: ReasoningControl, tokenizer: any Tokenizer) {
        self.control = control
        splitter = ReasoningSplitter(format: control.format, opened: control.opened)
        var silent: [Int32: String] = [:]
        if tokenizer.isSpecial(control.format.openID) { silent[control.format.openID] = control.format.open }
        if tokenizer.isSpecial(control.format.closeID) { silent[control.format.closeID] = control.format.close }
        silentTags = silent
    }

    /// The token this step must be, if any: the next of the closing sequence, or its first once
    /// the budget is spent inside the block.
    mutating func nextForced() -> Int32? {
        if let next = forced.popFirst() { return next }
        if splitter.phase == .reasoning, !closing, let budget = control.budget, count >= budget { return beginClosing() }
        return nil
    }

    /// Starts the closing sequence (the model ended its reply inside the block, or the budget
    /// is spent) and returns its first token.
    mutating func beginClosing() -> Int32? {
        guard !closing else { return nil }
        closing = true
        forced = control.closing[...]
        return forced.popFirst()
    }

    /// A constraint's mask for a step in `phase`: before the reply has decided, the opening tag
    /// is allowed beside the grammar's first tokens; in the answer, neither tag is.
    func adjust(_ mask: inout [UInt64], phase: ReasoningSplitter.Phase) {
        if phase == .undecided {
            Self.set(&mask, control.format.openID, true)
        } else {
            Self.set(&mask, control.format.openID, false)
            Self.set(&mask, control.format.closeID, false)
        }
    }

    /// The tokens a step in `phase` (past the undecided start) may sample, of a vocabulary of
    /// `vocabulary` ids: inside the block every token but the opening tag (no nested block);
    /// in the answer every token but both tags (one block per reply, no stray tag in the answer).
    mutating func allowed(in phase: ReasoningSplitter.Phase, vocabulary: Int) -> [UInt64] {
        let words = (vocabulary + 63) / 64
        if openingBanned.count != words {
            openingBanned = [UInt64](repeating: ~0, count: words)
            Self.set(&openingBanned, control.format.openID, false)
            tagsBanned = openingBanned
            Self.set(&tagsBanned, control.format.closeID, false)
        }
        return phase == .answer ? tagsBanned : openingBanned
    }

    /// Sets or clears token `id`'s bit of `mask` (ids outside it are left alone).
    static func set(_ mask: inout [UInt64], _ id: Int32, _ on: Bool) {
        let i = Int(id)
        guard i >= 0, i / 64 < mask.count else { return }
        if on { mask[i / 64] |= 1 << UInt64(i % 64) } else { mask[i / 64] &= ~(1 << UInt64(i % 64)) }
    }

    /// Splits token `id`'s text (`piece`, what the detokenizer gave) into reasoning and answer,
    /// counts the token, and records the block's count in `summary`. `phase` is the phase
    /// before the token, `forced` whether the token was forced, `end` whether it ends the
    /// reply; under a constraint (`constrained`) a closing tag the model wrote is followed by
    /// the forced separator, so the grammar starts where the answer does.
    mutating func split(
        _ piece: String, id: Int32, phase: ReasoningSplitter.Phase, forced: Bool, end: Bool, summary: inout GenerationSummary,
        constrained: Bool = false
    ) -> (reasoning: String, answer: String) {
        var (thought, said) = splitter.push(piece + (silentTags[id] ?? ""))
        if end {
            let rest = splitter.finish()
            thought += rest.reasoning
            said += rest.answer
        }
        if forced || phase == .reasoning { count += 1 }
        if phase == .undecided {
            undecided += 1
            switch splitter.phase {
            case .reasoning: count += undecided
            case .answer, .undecided: break
            }
            if splitter.phase != .undecided { undecided = 0 }
        }
        lastInBlock = forced || phase == .reasoning || splitter.phase == .reasoning
        endedNow = phase != .answer && splitter.phase == .answer && count > 0
        if endedNow, !closing {
            closing = true
            if constrained, said.isEmpty { self.forced = control.closing.dropFirst(control.closeLength) }
        }
        summary.reasoningTokens = count
        return (thought, said)
    }
}
