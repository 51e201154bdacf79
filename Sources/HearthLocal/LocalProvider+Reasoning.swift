import Foundation
import HearthEngine
import HearthProviders
import HearthTokenizers

/// Reasoning on the local model (docs/REASONING.md, "Local models"): a model whose vocabulary
/// has the `<think>`/`</think>` tokens (``ReasoningFormat``) reasons in a block that the engine
/// splits from the answer; the request's ``ReasoningOptions`` bound it.
extension LocalProvider {
    /// Whether `request` turns reasoning off: `enabled` false, or a budget of 0 (an effort
    /// always means a budget above 0), or `chat_template_kwargs.enable_thinking` false.
    static func reasoningOff(_ request: ChatRequest) -> Bool {
        if thinkingSwitch(request) == false { return true }
        guard let options = request.options.reasoning else { return false }
        return !options.enabled || options.resolvedBudget == 0
    }

    /// The prompt text with reasoning closed before it starts when the request turns it off
    /// and the model reasons: the template's no-think form (`<think>\n\n</think>\n\n`, or its
    /// rest when the generation prompt opened the block), so the whole reply is answer.
    func reasoningPrompt(_ text: String, _ request: ChatRequest, _ model: TransformerModel) -> String {
        guard Self.reasoningOff(request), request.continuation?.isEmpty ?? true, let format = model.reasoningFormat else {
            return text
        }
        // A template that read `enable_thinking: false` has closed the block itself.
        if text.trimmingCharacters(in: .whitespacesAndNewlines).hasSuffix(format.close) { return text }
        return text + format.noThinkSuffix(promptOpens: format.promptOpens(text))
    }

    /// Sets `parameters` up to split the reasoning of a reasoning model from its answer and to
    /// bound it by the request's budget (``ReasoningOptions/resolvedBudget``; nil: unbounded).
    /// Nothing for a model that does not reason, a request that turned reasoning off (its
    /// prompt closed the block, ``reasoningPrompt(_:_:_:)``), raw text and a continued answer.
    func applyReasoning(
        _ request: ChatRequest, prompt: [Int32], rawText: Bool, to parameters: inout GenerationParameters, generator: Generator
    ) throws {
        let model = generator.model
        guard !rawText, request.continuation?.isEmpty ?? true, let format = model.reasoningFormat else { return }
        if Self.reasoningOff(request) {
            // The prompt closed the block; the opening tag is not sampled (no second block).
            parameters.sampling.logitBias[format.openID] = -1e9
            parameters.sampling.logitBias[format.closeID] = -1e9
            return
        }
        // The prompt's last tokens, as text (special tokens written), say whether it opened the block.
        let tail = model.tokenizer.decode(Array(prompt.suffix(4)), skipSpecialTokens: false)
        do {
            parameters.reasoning = try ReasoningControl(
                format: format, opened: format.promptOpens(tail), budget: request.options.reasoning?.resolvedBudget,
                tokenizer: model.tokenizer)
        } catch {
            throw providerError(error)
        }
    }

    /// The reasoning part a local reply ends its block with (no signature: the text is the
    /// whole reasoning, readable by any provider it is sent back to).
    func reasoningPart(_ text: String) -> ReasoningPart {
        ReasoningPart(text: text, provider: id)
    }
}
