import Foundation
import HearthLocal
import HearthProviders
import Hummingbird

/// The chat template over HTTP (issue 58): `POST /apply-template` (llama-server's) renders a
/// chat completion request to the prompt the local model would be given; `GET /props`
/// (llama-server's) says which template renders a model's prompts.
extension HearthServer {
    /// Registers `/apply-template` and `/props`.
    func chatTemplateRoutes(_ router: some RouterMethods<ServerRequestContext>) {
        router.post("/apply-template") { _, context in await self.applyTemplate(context) }
        router.get("/props") { request, context in await self.props(request, context) }
    }

    /// `POST /apply-template`: a `/v1/chat/completions` body (every field that endpoint takes,
    /// checked the same way; `model` optional, as on `/tokenize`; plus vLLM's
    /// `add_generation_prompt`, default true, and `continue_final_message`, default false, which
    /// leaves the final assistant message open and then needs `add_generation_prompt` false or
    /// absent) → `{"prompt": "…"}`, the text
    /// the local model would be given: its chat template applied to the messages, tools and
    /// `chat_template_kwargs`, the no-think block when the request turns reasoning off. A
    /// template that fails on the conversation is a 400 naming the template's error. Admitted
    /// like a generation (a fair-queue turn); loads the model when it is not loaded.
    func applyTemplate(_ context: ServerRequestContext) async -> Response {
        do {
            var json = try RequestParser.json(context.body)
            var fields = try Fields(json)
            // vLLM's prompt-ending flags, taken here and left out of the chat request.
            let continueFinal = try fields.bool("continue_final_message") ?? false
            let generate = try fields.bool("add_generation_prompt") ?? !continueFinal
            if continueFinal && generate {
                throw APIError.invalid(
                    "continue_final_message", "'continue_final_message' leaves the last message open; it cannot be combined with 'add_generation_prompt': true.")
            }
            if case .object(let pairs) = json {
                json = .object(pairs.filter { $0.0 != "continue_final_message" && $0.0 != "add_generation_prompt" })
                fields = try Fields(json)
            }
            let client = (context.caller ?? GatewayAuthenticator.anonymous).client
            let (route, provider) = try localRoute(fields, client: client)
            try requireReady()
            let parser = RequestParser(alias: try fields.string("model") ?? "local", maxTokensLimit: Int.max, body: context.body)
            var job = try parser.chat(json)
            job.options.reasoning = job.hints.reasoning.options
            guard case .chat(let messages) = job.input else {
                throw APIError.invalid("messages", "'messages' is required.", code: "missing_field")
            }
            var request = ChatRequest(messages: messages, options: job.options)
            request.optionsChecked = true  // checked as the request was parsed
            let ending: LocalProvider.PromptEnding = continueFinal ? .finalMessageOpen : generate ? .generationPrompt : .afterLastMessage
            let prompt = try await runAdmitted(route, client: client, channel: context.channel) { [request] _ in
                try await provider.promptText(request, ending: ending)
            }
            return Self.json(200, ["prompt": .string(prompt)])
        } catch {
            return Self.errorResponse(Self.apiError(error), endpoint: .chatCompletions, requestID: context.requestID)
        }
    }

    /// `GET /props[?model=NAME]`: the served model's name and how its prompts are rendered —
    /// `chat_template` (the model's own Jinja source, as llama-server gives it; empty for a
    /// hand-written format) and `chat_template_renderer` (``LocalProvider/promptRenderer``:
    /// the template's origin or the hand-written format). Loads the model when it is not loaded.
    func props(_ request: Request, _ context: ServerRequestContext) async -> Response {
        do {
            let client = (context.caller ?? GatewayAuthenticator.anonymous).client
            var pairs: [(String, JSONValue)] = []
            if let model = request.uri.queryParameters.get("model") { pairs.append(("model", .string(model))) }
            let (_, provider) = try localRoute(try Fields(.object(pairs)), client: client)
            try requireReady()
            try await provider.prewarm(nil)  // loads the model (nothing is prefilled)
            return Self.json(
                200,
                [
                    "model_alias": .string(provider.modelName), "chat_template": .string(provider.chatTemplateSource ?? ""),
                    "chat_template_renderer": .string(provider.promptRenderer ?? "unknown"),
                ])
        } catch {
            return Self.errorResponse(Self.apiError(error), requestID: context.requestID)
        }
    }
}

extension RequestParser {
    /// The most bytes `chat_template_kwargs` may have (serialized).
    static let maxChatTemplateKwargsBytes = 64 << 10

    /// The most bytes top-level `documents` may have (serialized).
    static let maxDocumentsBytes = 1 << 20

    /// `chat_template_kwargs` (llama-server's and vLLM's extra): an object of extra variables
    /// for the local model's chat template, with vLLM's top-level `documents` (an array of
    /// objects) added as the template's `documents`; kept as JSON text, nil when neither is given.
    /// - Throws: `APIError` 400 when the kwargs are not an object or larger than
    ///   ``maxChatTemplateKwargsBytes``, when `documents` is not an array of objects or larger
    ///   than ``maxDocumentsBytes``, or when both give `documents`.
    /// A 400 `too_large` naming `param` when `value` serialized is more than `limit` bytes.
    private static func refuseLarger(_ value: JSONValue, than limit: Int, param: String) throws {
        let size = value.serialized().count
        guard size <= limit else {
            throw APIError.invalid(param, "'\(param)' is \(size) bytes; at most \(limit) are allowed per request.", code: "too_large")
        }
    }

    static func chatTemplateKwargs(_ f: Fields) throws -> String? {
        var pairs: [(String, JSONValue)] = []
        if let value = f.value("chat_template_kwargs"), value != .null {
            guard case .object(let given) = value else {
                throw APIError.invalid(
                    "chat_template_kwargs", "'chat_template_kwargs' must be an object of variables for the chat template.",
                    code: "invalid_type")
            }
            try refuseLarger(value, than: maxChatTemplateKwargsBytes, param: "chat_template_kwargs")
            pairs = given
        }
        if let documents = f.value("documents"), documents != .null {
            guard case .array(let items) = documents, items.allSatisfy({ if case .object = $0 { true } else { false } }) else {
                throw APIError.invalid(
                    "documents", "'documents' must be an array of objects (such as {\"title\": …, \"text\": …}) for the chat template.",
                    code: "invalid_type")
            }
            try refuseLarger(documents, than: maxDocumentsBytes, param: "documents")
            guard !pairs.contains(where: { $0.0 == "documents" }) else {
                throw APIError.invalid("documents", "Give 'documents' once: top-level or in 'chat_template_kwargs', not both.")
            }
            pairs.append(("documents", documents))
        }
        guard !pairs.isEmpty else { return nil }
        return JSONValue.object(pairs).serialized
    }
}
