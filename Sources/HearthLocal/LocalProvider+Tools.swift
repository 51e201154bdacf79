import HearthConstraints
import HearthEngine
import HearthProviders
import HearthTokenizers

extension LocalProvider {
    /// The tool format of `model` as this provider renders it (the base-model dialogue, or the
    /// model's chat template), nil when it has neither.
    func toolFormat(_ model: TransformerModel) -> ToolFormat? {
        if usesDialogue(model) { return ToolFormat.forTemplate(.dialogue) }
        guard let template = model.chatTemplate else { return nil }
        // A template of no hand-written family: Phi-4-mini's call list if it writes one, else the tags.
        if template.format == .jinja, let jinja = template.activeJinja, jinja.mentions("functools[") { return ToolFormat(.functools) }
        return ToolFormat.forTemplate(template.format)
    }

    /// Whether a request involves tools: tools offered, or calls and results in its history.
    static func involvesTools(_ request: ChatRequest) -> Bool {
        !request.options.tools.isEmpty || request.messages.contains { $0.role == .tool || !$0.toolCalls.isEmpty }
    }

    /// Sets `parameters` up to generate under the request's tool choice: the grammar of the
    /// model's call syntax with each tool's arguments under its schema (``ToolFormat/grammar(tools:choice:parallel:)``).
    /// Required and named choices drop the dialogue's stop strings (the grammar ends the reply).
    /// - Throws: `ProviderError` `.invalidRequest` naming `tools[i].parameters` for a schema
    ///   that cannot be enforced; `.unsupported` with a response format beside the tools.
    func applyTools(_ request: ChatRequest, to parameters: inout GenerationParameters, generator: Generator) throws {
        let options = request.options
        guard !options.tools.isEmpty else { return }
        if options.constrainedFormat != nil {
            throw ProviderError(
                .unsupported(feature: "response_format with tools"), provider: id,
                message: "the local model cannot take a response_format together with tools; send one or the other")
        }
        guard let format = toolFormat(generator.model) else {
            throw ProviderError(.invalidRequest, provider: id, message: "this model has no chat template, so it cannot be given tools")
        }
        let choice = options.effectiveToolChoice
        let grammar: Grammar
        do {
            grammar = try format.grammar(tools: options.tools, choice: choice, parallel: options.parallelToolCalls ?? true)
        } catch let error as ConstraintError {
            let field = error.schemaIndex.map { i in "tools[\(i)].parameters" } ?? "tools"
            // The constraint error itself (its `schemaIndex` names the tool): a server names the
            // tool's field as its client wrote it.
            throw ProviderError(
                .invalidRequest, provider: id, message: "\(field): the schema cannot be enforced: \(error)", underlying: error)
        }
        do {
            try ResponseFormatGrammar.apply(grammar, to: &parameters, model: generator.model, prefix: request.continuation ?? "")
        } catch let error as ConstraintError {
            throw ProviderError(.invalidRequest, provider: id, message: "the partial answer to continue: \(error)", underlying: error)
        }
        switch choice {
        case .required, .named: parameters.stop = options.stop
        case .auto, .disabled: break
        }
    }

    /// The scanner that splits the reply into text and calls, when the request has tools.
    func toolScanner(_ request: ChatRequest, generator: Generator) -> ToolCallScanner? {
        guard !request.options.tools.isEmpty, let format = toolFormat(generator.model) else { return nil }
        return ToolCallScanner(format: format)
    }
}
