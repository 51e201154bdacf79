import ArgumentParser
import Foundation
import HearthHub

/// Model names wherever a path is accepted: `--model` takes a path, `org/repo[:QUANT]` (found
/// in the Hugging Face cache, else pulled with the same checks as `hearth pull` unless
/// `HF_HUB_OFFLINE` is set), or a short name from `models/registry.json` (docs/MODELS.md).
/// The resolution is the library's (``ModelCatalog``, HearthHub), which apps use too; this
/// adds the CLI's registry fallback (the copy built into the binary) and its messages.
enum ModelNames {
    /// What a `--model` value stands for.
    typealias Target = ModelCatalog.Target

    /// Whether a `--model` value is a path (it exists on disk) rather than a name.
    static func isPath(_ text: String) -> Bool { ModelCatalog.isPath(text) }

    /// The catalog: `models/registry.json` where ``DefaultModel`` looks (`$HEARTH_MODELS`, else
    /// the checkout's `models/`; never the working directory), else the copy built into the
    /// binary (`embeddedRegistry`), so an installed `hearth` knows the short names too.
    static func catalog() -> ModelCatalog {
        ModelCatalog.standard(
            environment: ProcessInfo.processInfo.environment, executable: DefaultModel.executableURL(),
            fallback: try? JSONDecoder().decode(ModelRegistry.self, from: Data(embeddedRegistry.utf8)))
    }

    /// The registry table (``catalog()``'s).
    static func registry() -> ModelRegistry? { catalog().registry }

    /// Decides what `text` names: an existing path first, then a short name, then `org/repo[:QUANT]`.
    static func target(_ text: String) throws -> Target {
        do { return try catalog().target(text) } catch { throw ValidationError(error.description) }
    }

    /// The hub client for this process's environment, reporting progress on stderr.
    static func hub(label: String) -> HubModels {
        let progress = TransferProgress(label: label)
        return HubModels(environment: .current(), progress: { progress.report($0) })
    }

    /// The path to load for a `--model` value (nil: the default model), pulling a named model
    /// that is not cached yet. For synchronous commands (waits on the main thread).
    static func path(_ text: String?) throws -> String {
        switch try text.map(target) ?? DefaultModel.target() {
        case .local(let path): return path
        case .hub(let reference, let pins):
            do {
                return try blocking { try await hub(label: reference.repo.id).resolve(reference, expected: pins).path.path }
            } catch let error as HubError { throw ValidationError("\(error)") }
        }
    }

    /// ``path(_:)`` for async commands.
    static func resolvedPath(_ text: String?) async throws -> String {
        switch try text.map(target) ?? DefaultModel.target() {
        case .local(let path): return path
        case .hub(let reference, let pins):
            do { return try await hub(label: reference.repo.id).resolve(reference, expected: pins).path.path } catch let error as HubError {
                throw ValidationError("\(error)")
            }
        }
    }
}
