import HearthProviders

/// One reasoning part being streamed: its deltas go out as
/// ``HearthProviders/ChatEvent/reasoningDelta(_:)`` and its end as one
/// ``HearthProviders/ChatEvent/reasoningEnded(_:)`` carrying the whole text and, for Anthropic,
/// the signature. The OpenAI-compatible and DashScope formats have no explicit end: the part
/// ends where the answer (text or a tool call) begins, or with the reply.
struct StreamedReasoning {
    /// The provider id stamped on each part (``HearthProviders/ReasoningPart/provider``).
    let provider: String
    private var text = ""
    private var open = false

    init(provider: String) {
        self.provider = provider
    }

    /// Whether a part is open.
    var isOpen: Bool { open }

    /// Sends `delta` (nothing when empty) and opens a part if none is open.
    mutating func add(_ delta: String, sink: EventSink) {
        guard !delta.isEmpty else { return }
        open = true
        text += delta
        sink.reasoning(delta)
    }

    /// Ends the open part (nothing when none is open) with what the provider gave to send back.
    mutating func end(signature: String? = nil, sink: EventSink) {
        guard open else { return }
        sink.reasoningEnded(ReasoningPart(text: text, signature: signature, provider: provider))
        text = ""
        open = false
    }
}

/// How an OpenAI-compatible server takes ``HearthProviders/ChatOptions/reasoning``: the
/// field names differ by server, and sending a field a server does not know can be a 400.
public enum ReasoningDialect: Sendable, Equatable {
    /// OpenAI's `reasoning_effort` (`minimal`/`low`/`medium`/`high`), sent only when the options
    /// name an effort; OpenAI chat has no switch to turn reasoning off or a budget, so those are
    /// not sent (a reasoning model then reasons at its default effort).
    case openAI
    /// Qwen on DashScope's compatible mode: `enable_thinking` (the options' `enabled`) and
    /// `thinking_budget` (the resolved budget, when reasoning is on and has one).
    case qwen
    /// vLLM and llama.cpp's server: `chat_template_kwargs.enable_thinking` (the switch Qwen3 and
    /// DeepSeek-R1 templates read) and `reasoning_effort` when the options name an effort.
    case chatTemplateKwargs
    /// Reasoning options are not sent at all (DeepSeek: its reasoner always reasons and its
    /// chat model never does).
    case none
}
