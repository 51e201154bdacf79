import ArgumentParser
import Foundation
import HearthEngine
import HearthLocal
import HearthProviders
import HearthTokenizers

struct Generate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Generate text from a prompt, streaming tokens to stdout.",
        discussion: """
            The prompt is the argument (hearth generate "Why is the sky blue?"), -p TEXT, -f FILE, or \
            stdin when it is piped (echo Hi | hearth generate -n 16).
            """)

    @OptionGroup var model: ModelOptions
    @OptionGroup var runtime: RuntimeOptions
    @OptionGroup var sampling: SamplingFlags
    @OptionGroup var speculation: SpeculativeOption
    @OptionGroup var template: ChatTemplateOption

    @Argument(help: "The prompt text (or give -p, -f FILE, or pipe it on stdin).")
    var text: String?

    @Option(name: [.customShort("p"), .long], help: "The prompt text.")
    var prompt: String?

    @Option(name: [.customShort("f"), .long], help: ArgumentHelp("Read the prompt from FILE (- for stdin).", valueName: "FILE"))
    var file: String?

    @OptionGroup var length: MaxTokensOption
    var maxTokens: Int { length.value(default: 256) }

    @Option(name: .long, help: "Stop when this text is generated (repeatable; not printed).")
    var stop: [String] = []

    @Flag(name: .long, help: "Use the prompt as is instead of wrapping it in the model's chat template as one user turn.")
    var raw = false

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "Write JSON Lines: one object per token, then a summary object.",
            discussion: "A reasoning model's reasoning tokens are tagged \"reasoning\": true (their text is the reasoning), and the summary counts them in reasoning_tokens."))
    var json = false

    @Option(
        name: .long,
        help: "With a reasoning model (<think> tokens), close its reasoning block after N tokens (the model's own closing sequence follows).")
    var reasoningBudget: Int?

    @Option(name: .long, help: "With --json, include the K most likely tokens and their log-probabilities per step.")
    var topLogprobs: Int = 0

    @Option(
        name: [.customShort("j"), .long],
        help: ArgumentHelp(
            "Constrain the output to JSON that validates against this JSON Schema (the schema's text, as llama.cpp's -j takes it).",
            discussion: "Enforced token by token; a keyword that cannot be enforced is an error naming it. See docs/STRUCTURED.md.",
            valueName: "SCHEMA"))
    var jsonSchema: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Like --json-schema, with the schema read from FILE.", valueName: "FILE"))
    var jsonSchemaFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Constrain the output to this GBNF grammar (its text; llama.cpp's syntax, start rule 'root').", valueName: "GBNF"))
    var grammar: String?

    @Option(name: .long, help: ArgumentHelp("Like --grammar, with the grammar read from FILE.", valueName: "FILE"))
    var grammarFile: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Constrain the whole output to match the regular expression RE (ECMAScript syntax; see docs/STRUCTURED.md).",
            valueName: "RE"))
    var regex: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Let the model call the tools defined in FILE: a JSON array of OpenAI-style tools ({\"type\": \"function\", \"function\": {name, description, parameters}}) or of {name, description, parameters}.",
            discussion: "Calls are printed as JSON lines {\"tool_call\": {id, name, arguments}}; their arguments are generated under each tool's schema. See docs/TOOLS.md.",
            valueName: "FILE"))
    var tools: String?

    @Option(
        name: .long,
        help: ArgumentHelp("With --tools: auto (the default), none, required, or a tool's name (exactly one call to it).", valueName: "CHOICE"))
    var toolChoice: String?

    @Flag(name: .long, help: "With --tools: at most one call per reply.")
    var noParallelToolCalls = false

    /// The format flags given (at most one is allowed).
    var formats: [String?] { [jsonSchema, jsonSchemaFile, grammar, grammarFile, regex] }

    func validate() throws {
        if [text, prompt, file].compactMap({ $0 }).count > 1 {
            throw ValidationError("Give the prompt once: as text, with -p/--prompt, or with -f/--file.")
        }
        if tools != nil && (raw || json || formats.contains { $0 != nil }) {
            throw ValidationError("--tools cannot be combined with --raw, --json, --json-schema, --grammar or --regex.")
        }
        if tools == nil && (toolChoice != nil || noParallelToolCalls) {
            throw ValidationError("--tool-choice and --no-parallel-tool-calls need --tools.")
        }
        if topLogprobs < 0 || topLogprobs > 100 { throw ValidationError("--top-logprobs must be between 0 and 100") }
        if let reasoningBudget, reasoningBudget < 1 {
            throw ValidationError("--reasoning-budget must be at least 1.")
        }
        if formats.compactMap({ $0 }).count > 1 {
            throw ValidationError("Give one of --json-schema, --json-schema-file, --grammar, --grammar-file and --regex.")
        }
        if regex?.isEmpty == true || grammar?.isEmpty == true || jsonSchema?.isEmpty == true {
            throw ValidationError("--regex, --grammar and --json-schema must not be empty")
        }
    }

    /// The flag that set the output format, for error messages.
    var formatFlag: String {
        jsonSchema != nil ? "--json-schema" : jsonSchemaFile != nil ? "--json-schema-file"
            : grammar != nil ? "--grammar" : grammarFile != nil ? "--grammar-file" : "--regex"
    }

    /// The prompt: the positional text, `-p`, `-f FILE` (`-` is stdin), else stdin when it is
    /// not a terminal (`echo Hi | hearth generate`).
    func promptText() throws -> String {
        if let text = text ?? prompt { return text }
        if let file, file != "-" {
            do { return try String(contentsOfFile: file, encoding: .utf8) } catch {
                throw ValidationError("-f \(file): cannot read the file (\(error.localizedDescription))")
            }
        }
        guard file == "-" || isatty(STDIN_FILENO) == 0 else {
            throw ValidationError("Give a prompt: hearth generate \"TEXT\", -p TEXT, -f FILE, or pipe it on stdin.")
        }
        let data = FileHandle.standardInput.readDataToEndOfFile()
        guard let read = String(data: data, encoding: .utf8) else { throw ValidationError("the prompt on stdin is not UTF-8 text") }
        // A piped line's newline is not part of the prompt (`echo Hi`), as llama.cpp trims it.
        let trimmed = read.hasSuffix("\n") ? String(read.dropLast()) : read
        guard !trimmed.isEmpty else { throw ValidationError("the prompt on stdin is empty") }
        return trimmed
    }

    /// The output format the flags ask for (files read here), nil for free text.
    func responseFormat() throws -> ResponseFormat? {
        func read(_ path: String, _ flag: String) throws -> String {
            do { return try String(contentsOfFile: path, encoding: .utf8) } catch {
                throw ValidationError("\(flag) \(path): cannot read the file (\(error.localizedDescription))")
            }
        }
        var format: ResponseFormat?
        if let jsonSchema {
            format = .jsonSchema(name: "schema", schema: jsonSchema)
        } else if let jsonSchemaFile {
            let name = URL(fileURLWithPath: jsonSchemaFile).deletingPathExtension().lastPathComponent
            let safe = String(name.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "-") }.prefix(64).map(Character.init))
            format = .jsonSchema(name: safe.isEmpty ? "schema" : safe, schema: try read(jsonSchemaFile, "--json-schema-file"))
        } else if let grammar {
            format = .grammar(grammar)
        } else if let grammarFile {
            format = .grammar(try read(grammarFile, "--grammar-file"))
        } else if let regex {
            format = .regex(regex)
        }
        do { try format?.validate() } catch { throw ValidationError(error.message) }
        return format
    }

    /// The tool options the flags ask for (the file read and checked here), nil without --tools.
    func toolOptions() throws -> (tools: [ToolDefinition], choice: ToolChoice)? {
        guard let tools else { return nil }
        let text: String
        do { text = try String(contentsOfFile: tools, encoding: .utf8) } catch {
            throw ValidationError("--tools \(tools): cannot read the file (\(error.localizedDescription))")
        }
        let definitions: [ToolDefinition]
        do { definitions = try ToolDefinition.parseList(text) } catch {
            throw ValidationError("--tools \(tools): \(error.message)")
        }
        let choice: ToolChoice
        switch toolChoice ?? "auto" {
        case "auto": choice = .auto
        case "none": choice = .disabled
        case "required": choice = .required
        case let name: choice = .named(name)
        }
        return (definitions, choice)
    }

    func run() throws {
        try reportingErrors {
            let prompt = try promptText()
            if let toolOptions = try toolOptions() {
                try runWithTools(toolOptions.tools, choice: toolOptions.choice, prompt: prompt)
                return
            }
            let format = try responseFormat()
            if let format {
                // A schema, pattern or grammar that cannot be enforced is refused before the model loads.
                do { _ = try ResponseFormatGrammar.grammar(for: format) } catch { throw ValidationError("\(formatFlag): \(error)") }
            }
            let lm = try model.load(threads: runtime.threads, showProgress: !json, chatTemplate: template.chatTemplate)
            let generator = try Generator(
                model: lm, context: runtime.ctx, threads: runtime.threads, batch: runtime.batch,
                kvType: runtime.kernels.kvType,
                draftModel: try speculation.loadDraft(threads: runtime.threads, repackCache: model.source.repackCache))
            generator.quantizedBatchPath = runtime.kernels.batchPath
            generator.activationPrecision = runtime.kernels.precision
            let tokens =
                raw
                ? try lm.tokenizer.encode(prompt, addSpecialTokens: true)
                : try lm.chatPrompt([ChatTurn(role: "user", content: prompt)])
            var parameters = GenerationParameters()
            parameters.maxTokens = maxTokens
            parameters.sampling = sampling.samplingOptions(modelDefaults: lm.generationConfig)
            parameters.stop = stop
            parameters.topLogprobs = topLogprobs
            parameters.logprobs = json  // JSON lines carry each token's log-probability
            parameters.stripLeadingSpace = !raw
            parameters.speculative = speculation.mode
            if let reasoning = lm.reasoningFormat {
                // A reasoning model: its <think> block (opened by the model, or by the prompt —
                // a template's generation prompt, or a raw prompt ending in <think>) is split
                // from the answer, bounded by --reasoning-budget, and tagged in --json.
                let tail = lm.tokenizer.decode(Array(tokens.suffix(4)), skipSpecialTokens: false)
                parameters.reasoning = try ReasoningControl(
                    format: reasoning, opened: reasoning.promptOpens(tail), budget: reasoningBudget, tokenizer: lm.tokenizer)
            }
            if let format {
                do { try ResponseFormatGrammar.apply(format, to: &parameters, model: lm) } catch {
                    throw ValidationError("\(formatFlag): \(error)")
                }
            }
            let summary = try generator.run(prompt: tokens, parameters: parameters) { token in
                if json {
                    let line = TokenLine(
                        id: token.id, text: token.inReasoning ? token.reasoning : token.text, logprob: token.logprob,
                        top_logprobs: token.topLogprobs.map { .init(id: $0.id, logprob: $0.logprob) },
                        reasoning: token.inReasoning ? true : nil)
                    if let text = try? jsonLine(line) { emit(text) }
                } else {
                    // Reasoning goes to stderr, so stdout carries the answer only.
                    if !token.reasoning.isEmpty { FileHandle.standardError.write(Data(token.reasoning.utf8)) }
                    if token.endsReasoning { FileHandle.standardError.write(Data("\n".utf8)) }
                    emit(token.text)
                }
            }
            if json {
                emit(
                    try jsonLine(
                        DoneLine(
                            done: true, finish_reason: summary.finishReason.rawValue,
                            prompt_tokens: summary.promptTokens, completion_tokens: summary.completionTokens,
                            prefill_tokens_per_second: summary.prefillTokensPerSecond,
                            decode_tokens_per_second: summary.decodeTokensPerSecond,
                            drafted_tokens: summary.draftedTokens, accepted_draft_tokens: summary.acceptedDraftTokens,
                            reasoning_tokens: summary.reasoningTokens)))
            } else {
                emit("\n")
            }
        }
    }

    struct TokenLine: Encodable {
        struct Alternative: Encodable {
            let id: Int32, logprob: Float
        }
        let id: Int32, text: String, logprob: Float, top_logprobs: [Alternative]
        /// `true` on the tokens of a reasoning model's reasoning block (its tags, its reasoning,
        /// the closing sequence; `text` is then the reasoning, never answer); absent on answer tokens.
        let reasoning: Bool?
    }

    struct DoneLine: Encodable {
        let done: Bool, finish_reason: String, prompt_tokens: Int, completion_tokens: Int
        let prefill_tokens_per_second: Double, decode_tokens_per_second: Double
        /// Speculative decoding: tokens drafted and accepted (each accepted one took no step of its own).
        let drafted_tokens: Int, accepted_draft_tokens: Int
        /// Of `completion_tokens`, those tagged `"reasoning": true` (0 for a model that does not reason).
        let reasoning_tokens: Int
    }

    /// Generates through `LocalProvider` (the same path as `hearth serve`), printing text as it
    /// comes and each call as a JSON line once it is complete.
    func runWithTools(_ tools: [ToolDefinition], choice: ToolChoice, prompt: String) throws {
        var options = sampling.generationOptions
        options.maxTokens = maxTokens
        options.stop = stop
        options.tools = tools
        options.toolChoice = choice
        options.parallelToolCalls = noParallelToolCalls ? false : nil
        do { try options.validate() } catch { throw ValidationError(error.message) }
        let lm = try model.load(threads: runtime.threads, showProgress: true, chatTemplate: template.chatTemplate)
        let provider = try LocalProvider(
            model: lm, context: runtime.ctx, threads: runtime.threads, batch: runtime.batch, kvType: runtime.kernels.kvType,
            speculative: speculation.mode,
            draftModel: try speculation.loadDraft(threads: runtime.threads, repackCache: model.source.repackCache))
        let request = ChatRequest(messages: [.user(prompt)], options: options)
        let finish = try blocking { () async throws -> HearthProviders.FinishReason in
            var calls = ToolCallCollector()
            var reason = HearthProviders.FinishReason.stop
            for try await event in provider.stream(request) {
                switch event {
                case .textDelta(let text): emit(text)
                case .reasoningDelta(let text): FileHandle.standardError.write(Data(text.utf8))  // apart from the answer
                case .reasoningEnded: FileHandle.standardError.write(Data("\n".utf8))
                case .toolCall(let step):
                    calls.add(step)
                    if case .finished(let index) = step, calls.calls.indices.contains(index) {
                        let call = calls.calls[index]
                        emit(try jsonLine(CallLine(tool_call: .init(id: call.id, name: call.name, arguments: call.arguments))))
                    }
                case .finished(let value): reason = value
                default: break
                }
            }
            return reason
        }
        if finish != .toolCalls { emit("\n") }
    }

    struct CallLine: Encodable {
        struct Call: Encodable { let id: String, name: String, arguments: String }
        let tool_call: Call
    }
}
