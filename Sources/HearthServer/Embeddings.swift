import Foundation
import HearthProviders
import Hummingbird

extension HearthServer {
    /// `POST /v1/embeddings` — placeholder until the engine's embedding capability lands.
    func embeddings(_ context: ServerRequestContext) async throws -> Response {
        throw APIError(status: 404, message: "Embeddings are not served yet.", type: "invalid_request_error", code: "not_found")
    }
}
