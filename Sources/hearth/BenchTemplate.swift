import ArgumentParser
import Foundation
import HearthTemplates

/// `hearth bench-template`: time rendering a long chat (about 4k tokens by default) with a Jinja
/// chat template through HearthTemplates, as a prompt is rendered for every request.
struct BenchTemplate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-template",
        abstract: "Time rendering a ~4k-token conversation with a chat template (HearthTemplates).",
        discussion: """
            The conversation alternates user and assistant turns of English prose until it holds
            about --tokens tokens (counted as 4 characters a token), after a system message, with
            a tool list. Prints the median and the fastest render over --runs renders, after
            warm-up renders; the template is compiled once, as a loaded model's is.
            """)

    @Argument(help: "A chat template file (.jinja); the default is a ChatML template with tools.")
    var template: String?

    @Option(name: .long, help: "Approximate conversation length in tokens.")
    var tokens: Int = 4096

    @Option(name: .long, help: "Timed renders.")
    var runs: Int = 200

    func validate() throws {
        if runs < 1 { throw ValidationError("--runs must be ≥ 1") }
        if tokens < 1 || tokens > 1_000_000 { throw ValidationError("--tokens must be in 1...1000000") }
    }

    static let chatML = """
        {%- if tools %}{{- '<|im_start|>system\\n' }}{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}\
        {{- "# Tools\\n\\n<tools>" }}{%- for tool in tools %}{{- "\\n" }}{{- tool | tojson }}{%- endfor %}{{- "\\n</tools><|im_end|>\\n" }}\
        {%- elif messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}{%- endif %}
        {%- for message in messages %}{%- if message.role != 'system' or not loop.first %}\
        {{- '<|im_start|>' + message.role + '\\n' + message.content | trim + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}
        {%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
        """

    /// A conversation of about `tokens` tokens.
    static func conversation(tokens: Int) -> ChatTemplateInput {
        let sentence = "The quick brown fox jumps over the lazy dog while the hearth keeps the room warm. "
        var messages: [JinjaValue] = [["role": "system", "content": "You are a helpful assistant."]]
        var chars = 0
        var turn = 0
        while chars < tokens * 4 {
            let content = String(repeating: sentence, count: 1 + turn % 4)
            messages.append(["role": turn % 2 == 0 ? "user" : "assistant", "content": .string(content)])
            chars += content.count
            turn += 1
        }
        if turn % 2 == 0 { messages.append(["role": "user", "content": "Thanks!"]) }
        let tool: JinjaValue = [
            "type": "function",
            "function": ["name": "get_weather", "description": "Weather for a city.", "parameters": ["type": "object", "properties": ["city": ["type": "string"]]]],
        ]
        return ChatTemplateInput(messages: messages, tools: [tool], addGenerationPrompt: true, specialTokens: ["bos_token": "<s>", "eos_token": "</s>"])
    }

    func run() throws {
        let source = try template.map { try String(contentsOfFile: $0, encoding: .utf8) } ?? Self.chatML
        let compiled = try Template(source)
        let input = Self.conversation(tokens: tokens)
        var length = 0
        for _ in 0..<10 { length = try compiled.apply(input).utf8.count }
        var times: [Double] = []
        let clock = ContinuousClock()
        for _ in 0..<runs {
            let start = clock.now
            _ = try compiled.apply(input)
            let elapsed = clock.now - start
            times.append(Double(elapsed.components.seconds) * 1e3 + Double(elapsed.components.attoseconds) / 1e15)
        }
        times.sort()
        let median = times[times.count / 2]
        print(String(format: "%d messages, %d bytes of prompt: median %.3f ms, fastest %.3f ms per render (%d runs)",
                     input.messages.count, length, median, times[0], runs))
    }
}
