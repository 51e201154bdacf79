import ArgumentParser
import Foundation
import HearthHub

/// Model names wherever a path is accepted: `--model` takes a path, `org/repo[:QUANT]` (found
/// in the Hugging Face cache, else pulled with the same checks as `hearth pull` unless
/// `HF_HUB_OFFLINE` is set), or a short name from `models/registry.json` (docs/MODELS.md).
enum ModelNames {
    /// What a `--model` value stands for.
    enum Target {
        /// A file or folder on disk.
        case local(String)
        /// A model on the hub, with the registry's pins when a short name named it.
        case hub(ModelReference, ExpectedFile?)
    }

    /// Whether a `--model` value is a path (it exists on disk) rather than a name.
    static func isPath(_ text: String) -> Bool { FileManager.default.fileExists(atPath: text) }

    /// The registry table: `models/registry.json` where ``DefaultModel`` looks (`$HEARTH_MODELS`,
    /// else the checkout's `models/`; never the working directory), else the copy built into
    /// the binary (`embeddedRegistry`), so an installed `hearth` knows the short names too.
    static func registry() -> ModelRegistry? {
        if let dir = DefaultModel.directory(), let table = try? ModelRegistry.load(dir.appendingPathComponent("registry.json")) {
            return table
        }
        return try? JSONDecoder().decode(ModelRegistry.self, from: Data(embeddedRegistry.utf8))
    }

    /// Decides what `text` names: an existing path first, then a short name, then `org/repo[:QUANT]`.
    static func target(_ text: String) throws -> Target {
        if FileManager.default.fileExists(atPath: text) { return .local(text) }
        let table = registry()
        if let entry = table?.entry(text) {
            if entry.repo == nil, let file = entry.file, let dir = DefaultModel.directory(),
                let path = DefaultModel.installedPath(file, in: dir), FileManager.default.fileExists(atPath: path)
            {
                try DefaultModel.checkInstalled(path, name: entry.name, bytes: entry.bytes)
                return .local(path)
            }
            if let reference = entry.reference {
                let pins = entry.bytes != nil || entry.sha256 != nil ? ExpectedFile(bytes: entry.bytes, sha256: entry.sha256) : nil
                return .hub(reference, pins)
            }
            throw ValidationError("\(printableName(text)) is in models/registry.json but not installed: run scripts/fetch-default-model.sh")
        }
        // A value shaped like a path (absolute, relative to a folder that exists here, or with a
        // model file's extension) is a missing file, not a repository to fetch.
        let firstComponent = text.split(separator: "/").first.map(String.init) ?? text
        var isDirectory: ObjCBool = false
        let pathLike = text.hasPrefix("/") || text.hasPrefix(".") || text.hasPrefix("~")
            || [".gguf", ".hqf", ".safetensors"].contains(where: text.lowercased().hasSuffix)
            || (text.contains("/") && FileManager.default.fileExists(atPath: firstComponent, isDirectory: &isDirectory) && isDirectory.boolValue)
        if pathLike {
            throw ValidationError(
                "model path does not exist: \(printableName(text)) (give a checkpoint directory, a .gguf or .hqf file, or a model name: ORG/REPO[:QUANT] or a short name from models/registry.json)")
        }
        if let reference = ModelReference(parsing: text) { return .hub(reference, nil) }
        let names = table?.models.map(\.name).joined(separator: ", ") ?? "none found"
        throw ValidationError(
            "no model file or folder at \(printableName(text)), and it is not a model name: give a path, org/repo[:QUANT] (a Hugging Face repository) or a short name from models/registry.json (\(names))")
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
