import Foundation
import HearthLocal
import HearthProviders
import Hummingbird

extension HearthServer {
    /// Anthropic's `POST /v1/messages/count_tokens`: the length in tokens of the prompt a
    /// `/v1/messages` request with the same `system`, `messages` and `tools` becomes on a local
    /// model (its chat template and tool prompt applied, as generation renders it) →
    /// `{"input_tokens": N}`. Errors in Anthropic's shape. Cloud routes are refused (400): their
    /// tokenizers are not here.
    func countTokens(_ context: ServerRequestContext) async -> Response {
        do {
            let ordered = try RequestParser.ordered(context.body)
            var json = JSONValue(ordered)
            try Fields(json).refuseUnknown(AcceptedFields.countTokens, anthropic: true)
            // The count takes no max_tokens; the messages reader requires one.
            if case .object(var pairs) = json, !pairs.contains(where: { $0.0 == "max_tokens" }) {
                pairs.append(("max_tokens", .number(1)))
                json = .object(pairs)
            }
            let name = try RequestParser.requiredModel(try Fields(json))
            let route = try gateway.route(name, for: (context.caller ?? GatewayAuthenticator.anonymous).client)
            guard case .local(let provider) = route.target else {
                throw APIError.invalid("model", "'\(name.prefix(200))' is a cloud route; tokens are counted for local models only.")
            }
            try requireReady()
            let parser = RequestParser(alias: name, maxTokensLimit: Int.max, body: context.body)
            parser.ordered.set(ordered)
            let job = try parser.messages(json)
            guard case .chat(let messages) = job.input else {
                throw APIError.invalid("messages", "'messages' is required.", code: "missing_field")
            }
            let count = try await provider.promptTokenCount(ChatRequest(messages: messages, options: job.options))
            return Self.json(200, ["input_tokens": .int(count)])
        } catch {
            return Self.errorResponse(Self.apiError(error), endpoint: .messages, requestID: context.requestID)
        }
    }
}
