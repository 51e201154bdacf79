import ArgumentParser

/// `--chat-template FILE|NAME`, for the commands that render chat prompts (`chat`, `generate`,
/// `serve`, `inspect`): the prompt format instead of the checkpoint's own template.
struct ChatTemplateOption: ParsableArguments {
    /// The help text (`serve` repeats it per model).
    static let help =
        "Render chat prompts with this template instead of the model's own: the path of a Jinja file, a named template the model file carries (e.g. tool_use, rag; default is its own), or a hand-written format (chatml, gemma, llama3, phi3, phi4-mini, instruct). By default the model's own Jinja template renders every prompt; a file without one gets its family's hand-written format."

    @Option(name: .customLong("chat-template"), help: ArgumentHelp(ChatTemplateOption.help, valueName: "file|name"))
    var chatTemplate: String?

    func validate() throws {
        if let chatTemplate, chatTemplate.isEmpty { throw ValidationError("--chat-template needs a file or a name") }
    }
}
