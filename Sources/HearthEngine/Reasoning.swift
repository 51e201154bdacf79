import HearthTokenizers

/// How a model family writes its reasoning: the `<think>`…`</think>` block of Phi-4-mini-reasoning,
/// the DeepSeek-R1 distills and Qwen3, taken from the model's vocabulary (both tags are tokens of
/// their own) and its chat template (a generation prompt that ends with the opening tag has
/// opened the block for the model, ``promptOpens(_:)``).
package struct ReasoningFormat: Sendable, Equatable {
    /// The opening tag (`<think>`).
    package var open: String
    /// The closing tag (`</think>`).
    package var close: String
    /// What the model writes between the closing tag and its answer (`"\n\n"`, as the
    /// templates' no-think form `<think>\n\n</think>\n\n` and the models' own traces do).
    package var separator: String
    /// The opening tag's token id.
    package var openID: Int32
    /// The closing tag's token id.
    package var closeID: Int32

    /// Creates a format.
    package init(open: String, close: String, separator: String, openID: Int32, closeID: Int32) {
        self.open = open
        self.close = close
        self.separator = separator
        self.openID = openID
        self.closeID = closeID
    }

    /// The `<think>` format when `tokenizer` has both tags as tokens of their own, else nil (the
    /// model does not reason: Phi-3, Phi-4-mini-instruct, Gemma 3, Llama 3 have no such tokens).
    package init?(tokenizer: any Tokenizer) {
        guard let openID = tokenizer.id(of: "<think>"), let closeID = tokenizer.id(of: "</think>"), openID != closeID else {
            return nil
        }
        self.init(open: "<think>", close: "</think>", separator: "\n\n", openID: openID, closeID: closeID)
    }

    /// Whether a rendered prompt has opened the block already: it ends with the opening tag
    /// and white space (Qwen3's and the later DeepSeek-R1 templates' generation prompt
    /// `<think>\n`), so the first generated token is reasoning.
    package func promptOpens(_ prompt: String) -> Bool {
        var end = prompt.endIndex
        while end > prompt.startIndex, prompt[prompt.index(before: end)].isWhitespace { end = prompt.index(before: end) }
        return prompt[..<end].hasSuffix(open)
    }

    /// The text that closes reasoning before it starts (the templates' no-think form): the
    /// empty block `<think>\n\n</think>\n\n`, or its rest when the prompt opened it.
    package func noThinkSuffix(promptOpens: Bool) -> String {
        (promptOpens ? "" : open + "\n") + "\n" + close + separator
    }
}

/// What a generation does with a reasoning model's reasoning (``GenerationParameters/reasoning``):
/// its text is split from the answer (``GeneratedToken/reasoning``), a constraint applies only
/// after the block closes, and a budget closes the block with the model's own closing sequence.
package struct ReasoningControl: Sendable {
    /// The family's tags.
    package var format: ReasoningFormat
    /// Whether the prompt opened the block (the first generated token is reasoning).
    package var opened: Bool
    /// The most reasoning tokens before the block is closed by force (nil: unbounded). The
    /// count starts with the opening tag; the closing sequence comes on top.
    package var budget: Int?
    /// The closing sequence forced when the budget is spent: the closing tag's token, then the
    /// separator's tokens.
    package var closing: [Int32]
    /// How many of ``closing``'s tokens are the tag (the rest is the separator, forced after a
    /// closing tag the model wrote itself when a constraint waits for the answer).
    package var closeLength: Int

    /// Creates a control; `tokenizer` encodes the closing sequence.
    /// - Throws: the tokenizer's error.
    package init(format: ReasoningFormat, opened: Bool, budget: Int?, tokenizer: any Tokenizer) throws {
        self.format = format
        self.opened = opened
        self.budget = budget.map { max(0, $0) }
        closing = [format.closeID] + (try tokenizer.encode(format.separator, addSpecialTokens: false))
        closeLength = 1
    }
}

/// Splits generated text into reasoning and answer by the format's tags, one token's text at a
/// time: text that may still be the start of a tag is held back until the next piece decides
/// it, so a tag split over several tokens never leaks a byte into the wrong part.
///
/// The reply is reasoning when it starts (after white space) with the opening tag, or when the
/// prompt opened the block; the reasoning ends at the closing tag, and the white space after
/// it (the separator) belongs to neither part.
package struct ReasoningSplitter: Sendable {
    /// Where the reply is.
    package enum Phase: Sendable, Equatable {
        /// Nothing but white space or the start of the opening tag so far.
        case undecided
        /// Inside the reasoning block.
        case reasoning
        /// After the block (or a reply that did not open one).
        case answer
    }

    /// The tags.
    package let format: ReasoningFormat
    /// The current phase.
    package private(set) var phase: Phase
    /// Text held back: the undecided start, or a tail of reasoning that may begin the closing tag.
    private var pending = ""
    /// Whether the answer's leading white space is still to be dropped (after a closing tag).
    private var trimAnswer = false
    /// Whether the reasoning's leading white space is still to be dropped (after the opening tag).
    private var trimReasoning = false

    /// Creates a splitter; `opened` when the prompt opened the block.
    package init(format: ReasoningFormat, opened: Bool) {
        self.format = format
        phase = opened ? .reasoning : .undecided
        trimReasoning = opened
    }

    /// Decides that the reply is an answer (a constraint chose a first token that is not the
    /// opening tag): held text goes out as answer.
    package mutating func decideAnswer() -> String {
        guard phase == .undecided else { return "" }
        phase = .answer
        defer { pending = "" }
        return pending
    }

    /// Splits the next piece of text into its reasoning and answer parts.
    package mutating func push(_ text: String) -> (reasoning: String, answer: String) {
        var reasoning = ""
        var answer = ""
        var input = text
        while true {
            switch phase {
            case .undecided:
                pending += input
                input = ""
                let start = pending.drop { $0.isWhitespace }
                if start.hasPrefix(format.open) {
                    phase = .reasoning
                    trimReasoning = true
                    input = String(start.dropFirst(format.open.count))
                    pending = ""
                    continue
                }
                if !start.isEmpty && !format.open.hasPrefix(start) {
                    phase = .answer
                    answer += pending
                    pending = ""
                }
                return (reasoning, answer)
            case .reasoning:
                pending += input
                input = ""
                if trimReasoning {
                    pending = String(pending.drop { $0.isWhitespace })
                    trimReasoning = pending.isEmpty
                }
                if let range = pending.range(of: format.close) {
                    reasoning += pending[..<range.lowerBound]
                    input = String(pending[range.upperBound...])
                    pending = ""
                    phase = .answer
                    trimAnswer = true
                    continue
                }
                let hold = Self.heldTail(pending, tag: format.close)
                reasoning += pending.dropLast(hold)
                pending = String(pending.suffix(hold))
                return (reasoning, answer)
            case .answer:
                if trimAnswer {
                    input = String(input.drop { $0.isWhitespace })
                    trimAnswer = input.isEmpty
                }
                answer += input
                return (reasoning, answer)
            }
        }
    }

    /// The held text at the end of the reply: an undecided start is answer, a held reasoning
    /// tail is reasoning.
    package mutating func finish() -> (reasoning: String, answer: String) {
        defer { pending = "" }
        switch phase {
        case .undecided: return ("", pending)
        case .reasoning: return (pending, "")
        case .answer: return ("", "")
        }
    }

    /// The length of the longest suffix of `text` that is a proper prefix of `tag`.
    static func heldTail(_ text: String, tag: String) -> Int {
        for length in stride(from: min(tag.count - 1, text.count), to: 0, by: -1) where text.hasSuffix(tag.prefix(length)) {
            return length
        }
        return 0
    }
}

extension TransformerModel {
    /// How this model writes its reasoning (``ReasoningFormat/init(tokenizer:)``), nil when it
    /// does not reason.
    package var reasoningFormat: ReasoningFormat? { ReasoningFormat(tokenizer: tokenizer) }
}
