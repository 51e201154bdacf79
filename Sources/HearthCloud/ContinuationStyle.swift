/// How an OpenAI-compatible server is asked to continue a partial answer
/// (``HearthProviders/ChatRequest/continuation``, set by the fallback router after a mid-stream failure).
///
/// Every style sends the partial text as a trailing `assistant` message; they differ in how the
/// server is told to continue it rather than start a new reply.
public enum ContinuationStyle: Sendable, Equatable {
    /// Just the trailing assistant message. Ollama and llama.cpp's server continue a final
    /// assistant message natively (they render it without an end-of-turn).
    case trailingAssistantMessage
    /// The trailing message marked `"prefix": true` (DeepSeek's chat prefix completion).
    case deepSeekPrefix
    /// The trailing message marked `"partial": true` (Qwen / DashScope compatible mode).
    case qwenPartial
    /// `"continue_final_message": true, "add_generation_prompt": false` (vLLM).
    case vllmContinueFinalMessage
    /// The trailing assistant message followed by a user message with this instruction. For
    /// servers with no prefill (OpenAI's own API): best effort, the model may rephrase.
    case instruction(String)

    /// The instruction used by ``OpenAICompatibleProvider/openAI(model:credentials:)``.
    public static let defaultInstruction =
        "Your previous reply was cut off. Continue it exactly where it stopped, without repeating any of it "
        + "and without any preamble."
}
