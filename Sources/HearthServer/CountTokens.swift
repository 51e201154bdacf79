import Foundation
import HearthLocal
import HearthProviders
import Hummingbird

extension HearthServer {
    /// Anthropic's `POST /v1/messages/count_tokens`: the length in tokens of the prompt a
    /// `/v1/messages` request with the same `system`, `messages` and `tools` becomes on a local
    /// model (its chat template and tool prompt applied, as generation renders it) →
    /// `{"input_tokens": N}`. Errors in Anthropic's shape. Cloud routes are refused (400): their
    /// tokenizers are not here. Admitted like a generation (``runAdmitted(_:client:channel:_:)``).
    func countTokens(_ context: ServerRequestContext) async -> Response {
        do {
            var json = try RequestParser.json(context.body)
            try Fields(json).refuseUnknown(AcceptedFields.countTokens, anthropic: true)
            // The count takes no max_tokens; the messages reader requires one.
            if case .object(var pairs) = json, !pairs.contains(where: { $0.0 == "max_tokens" }) {
                pairs.append(("max_tokens", .number(1)))
                json = .object(pairs)
            }
            let name = try RequestParser.requiredModel(try Fields(json))
            let client = (context.caller ?? GatewayAuthenticator.anonymous).client
            let route = try gateway.route(name, for: client)
            guard case .local(let provider) = route.target else {
                throw APIError.invalid("model", "'\(name.prefix(200))' is a cloud route; tokens are counted for local models only.")
            }
            try requireReady()
            let parser = RequestParser(alias: name, maxTokensLimit: Int.max, body: context.body)
            let job = try parser.messages(json, counting: true)  // takes `compaction` and ignores it, as the API does
            guard case .chat(let messages) = job.input else {
                throw APIError.invalid("messages", "'messages' is required.", code: "missing_field")
            }
            // Admitted like a generation: a fair-queue turn, stopped when the client leaves or at the timeout.
            let request = ChatRequest(messages: messages, options: job.options)
            let count = try await runAdmitted(route, client: client, channel: context.channel) { admission in
                try await provider.promptTokenCount(request, admission: admission)
            }
            return Self.json(200, ["input_tokens": .int(count)])
        } catch {
            return Self.errorResponse(Self.apiError(error), endpoint: .messages, requestID: context.requestID)
        }
    }
}
