import Foundation
import HearthHub
import HearthServer

/// The model store of `hearth serve`'s Ollama routes: `/api/pull` through Hearth's hub client
/// into the shared Hugging Face cache (as `hearth pull`), `/api/delete` from it (as `hearth rm`).
/// Names are `ORG/REPO[:QUANT]` or a short name from models/registry.json; Ollama's `:latest`
/// tag means no quant (Q4_K_M is chosen, as `hearth pull` chooses).
struct HubModelStore: ModelStore {
    /// The reference and pinned checksum a name stands for.
    static func reference(_ name: String) throws -> (ModelReference, ExpectedFile?) {
        var text = name
        if text.hasSuffix(":latest") { text = String(text.dropLast(":latest".count)) }
        if let entry = ModelNames.registry()?.entry(text), let reference = entry.reference {
            let pins = entry.bytes != nil || entry.sha256 != nil ? ExpectedFile(bytes: entry.bytes, sha256: entry.sha256) : nil
            return (reference, pins)
        }
        guard let reference = ModelReference(parsing: text) else {
            throw ModelStoreError(status: 400, message: "'\(printableName(String(name.prefix(200))))' is not a model name: give ORG/REPO[:QUANT]")
        }
        return (reference, nil)
    }

    /// A hub failure as the client sees it: the hub's own words name the repository and file,
    /// never a path of this machine or a token.
    static func storeError(_ error: HubError) -> ModelStoreError {
        let status: Int
        switch error.code {
        case .repositoryNotFound, .revisionNotFound, .fileNotFound, .noMatchingFile, .notCached: status = 404
        case .invalidReference, .ambiguousFile: status = 400
        case .unauthorized, .gated: status = 403
        case .fileSystem: return ModelStoreError(status: 500, message: "the model could not be written to the server's cache")
        default: status = 502
        }
        return ModelStoreError(status: status, message: error.description)
    }

    func pull(_ name: String, progress: @escaping @Sendable (ModelStoreProgress) -> Void) async throws {
        let (reference, pins) = try Self.reference(name)
        let hub = HubModels(environment: .current()) { step in
            switch step {
            case .cached(let path, let bytes): progress(ModelStoreProgress(file: path, completed: bytes, total: bytes))
            case .started(let path, let total, let resumedAt): progress(ModelStoreProgress(file: path, completed: resumedAt, total: total))
            case .advanced(let path, let done, let total): progress(ModelStoreProgress(file: path, completed: done, total: total))
            case .finished(let path, let bytes, _): progress(ModelStoreProgress(file: path, completed: bytes, total: bytes))
            case .retrying: break
            }
        }
        do { _ = try await hub.pull(reference, expected: pins) } catch let error as HubError { throw Self.storeError(error) }
    }

    func delete(_ name: String) throws -> Bool {
        let reference: ModelReference
        do { reference = try Self.reference(name).0 } catch { return false }
        do {
            let (removed, _) = try HubModels(environment: .current()).remove(reference)
            return !removed.isEmpty
        } catch let error as HubError {
            if [.repositoryNotFound, .fileNotFound, .noMatchingFile, .notCached].contains(error.code) { return false }
            throw Self.storeError(error)
        }
    }
}
