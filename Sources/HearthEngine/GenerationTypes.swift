import Foundation
import HearthConstraints
import HearthKernels
import HearthTokenizers

/// What to generate.
public struct GenerationParameters: Sendable {
    /// Stop after this many new tokens.
    public var maxTokens: Int = 256
    /// How to pick tokens.
    public var sampling = SamplingOptions()
    /// Stop when the text contains any of these (the stop string is not emitted).
    public var stop: [String] = []
    /// Report the log-probabilities of this many most likely tokens at each step.
    public var topLogprobs: Int = 0
    /// Drop the first token's leading space (replies that start after a chat template). Off
    /// while a constraint is set: the constraint sees exactly the bytes that are output.
    public var stripLeadingSpace = false
    /// Structured output: only tokens this compiled grammar allows are sampled, end-of-sequence
    /// only where the grammar is complete, and generation stops (`.stop`) once nothing but the
    /// end may follow. The token limit may still cut the output short (`.length`).
    /// Each sequence follows it with its own matcher. See `TransformerModel.compileConstraint`.
    package var constraint: CompiledConstraint?
    /// Bytes the constraint has already seen before the first generated token: a partial answer
    /// being continued (a failover mid-answer). The matcher starts after them; they must be a
    /// prefix the grammar allows (check with `ConstraintMatcher.advance(bytes:)` first).
    package var constraintPrefix: [UInt8] = []
    /// Speculative decoding (``SpeculativeMode``): prompt lookup by default. It changes how
    /// many tokens a step verifies, never which tokens are generated.
    public var speculative: SpeculativeMode = .lookup
    /// Whether each token's log-probability (``GeneratedToken/logprob``) is computed. It costs
    /// a pass of exponentials over the vocabulary per token (a tenth of a decode step of a
    /// 262k-token model), so what no one reads can be left out: false leaves `logprob` NaN.
    /// `topLogprobs` > 0 computes it either way.
    public var logprobs = true
    /// Under a constraint, finish within the token budget: a token after which the output could
    /// no longer be completed in the tokens left (`maxTokens`, the context) is replaced by the
    /// model's likeliest choice among those that keep a completion within reach, so strings
    /// close, arrays stop and optional parts are left out in time, and the answer ends complete
    /// (`.stop`) instead of cut (`.length`). It acts only on such a token: an answer that ends on
    /// its own within the budget is unchanged. False keeps the cut. The same flag turns on the
    /// repetition rule (``RepetitionRule``): a constrained output that loops is wound down the
    /// same way.
    public var finishInBudget = true
    /// A reasoning model's reasoning (``ReasoningControl``): its text is split from the answer
    /// (``GeneratedToken/reasoning``), ``constraint`` applies only after the block closes, the
    /// opening tag is not sampled again once decided, and a budget closes the block with the
    /// model's closing sequence. Nil: all text is answer.
    package var reasoning: ReasoningControl?

    public init() {}
}

/// Why generation ended.
public enum FinishReason: String, Sendable, Codable {
    /// An end-of-sequence token or a stop string.
    case stop
    /// The token limit or the context filled.
    case length
    /// The caller cancelled.
    case cancelled
}

/// One generated token.
public struct GeneratedToken: Sendable {
    public var id: Int32
    /// Text this token completed (may be empty while a multi-byte character is incomplete,
    /// or while text that may start a stop string is held back).
    public var text: String
    /// log p(token) under the model's full distribution (NaN when the request did not ask for
    /// it: ``GenerationParameters/logprobs``).
    public var logprob: Float
    /// The most likely alternatives, when requested.
    public var topLogprobs: [(id: Int32, logprob: Float)]
    /// Reasoning text this token completed (``GenerationParameters/reasoning``), never part of
    /// ``text``.
    public var reasoning = ""
    /// Whether the reasoning block closed with this token (the rest is answer).
    public var endsReasoning = false
    /// Whether this token belongs to the reasoning block (its tags, its text, the closing
    /// sequence): none of its bytes is answer.
    public var inReasoning = false
}

/// Counts and timings of a finished generation.
public struct GenerationSummary: Sendable {
    public var finishReason: FinishReason
    public var promptTokens: Int
    /// Prompt tokens that were served from the KV cache instead of being recomputed.
    public var cachedPromptTokens: Int
    public var completionTokens: Int
    public var prefillSeconds: Double
    public var decodeSeconds: Double
    /// Tokens drafted for speculative verification, and how many of them were accepted (each
    /// accepted one is a generated token that took no step of its own).
    public var draftedTokens = 0
    public var acceptedDraftTokens = 0
    /// Tokens that ``GenerationParameters/finishInBudget`` chose instead of the sampled one (0:
    /// the budget did not shape the answer).
    public var budgetShapedTokens = 0
    /// Whether the repetition rule (``RepetitionRule``) ended a constrained output that had
    /// fallen into a loop.
    public var repetitionEnded = false
    /// Of ``completionTokens``, those of the reasoning block: the opening tag, the reasoning and
    /// the closing sequence (0 without ``GenerationParameters/reasoning``).
    public var reasoningTokens = 0

    /// Prompt tokens processed per second (cached ones excluded).
    public var prefillTokensPerSecond: Double {
        prefillSeconds > 0 ? Double(promptTokens - cachedPromptTokens) / prefillSeconds : 0
    }
    /// Generated tokens per second after the first.
    public var decodeTokensPerSecond: Double {
        decodeSeconds > 0 && completionTokens > 1 ? Double(completionTokens - 1) / decodeSeconds : 0
    }
}

/// Events of a generation stream.
public enum GenerationEvent: Sendable {
    case token(GeneratedToken)
    case done(GenerationSummary)
}

/// An event of one of several continuations of a prompt
/// (``Generator/generate(prompt:choices:stops:)``): its index and the event.
package struct ChoiceEvent: Sendable {
    /// The continuation's index, 0 ..< the number of choices.
    package var choice: Int
    package var event: GenerationEvent

    package init(choice: Int, event: GenerationEvent) {
        self.choice = choice
        self.event = event
    }
}

/// Counts of a generator's scheduler steps (``Generator/stepStatistics``).
package struct StepStatistics: Sendable, Equatable {
    /// Forward steps run (each one batched pass of the model).
    package var steps = 0
    /// Sequences those steps held, summed over the steps (busy slots per step × steps).
    package var sequences = 0
    /// Tokens those steps processed (prompt chunks, decode tokens, drafts), summed.
    package var tokens = 0
    /// Steps whose output head computed only the token groups a grammar allowed
    /// (``Generator/sparseHead``), and the 16-token groups they computed, summed.
    package var sparseHeadSteps = 0
    package var sparseHeadGroups = 0

    package init() {}
}
