import Foundation
import HearthHub
import HearthTestSupport
import Testing

/// `ModelCatalog`: the one resolution of model names that apps (`LocalProvider.load`) and the
/// CLI (`--model`) share — a path, a short name (installed file or hub entry with pins), or
/// `org/repo[:QUANT]` — and its errors, which read as sentences in an alert.
@Suite struct ModelCatalogTests {
    /// A models folder with a registry naming an installed file, a hub entry with pins, and
    /// an entry whose file is missing.
    static func folder(installedBytes: Int = 16, pinnedBytes: Int64 = 16) throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-catalog-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try Data(repeating: 7, count: installedBytes).write(to: dir.appendingPathComponent("small.gguf"))
        let registry = """
            {"default": "small",
             "models": [
               {"name": "small", "file": "small.gguf", "bytes": \(pinnedBytes), "sha256": "\(String(repeating: "ab", count: 32))"},
               {"name": "small-hub", "repo": "org/small-GGUF", "repo_file": "small.gguf", "bytes": \(pinnedBytes), "sha256": "\(String(repeating: "ab", count: 32))"},
               {"name": "phi-ish", "repo": "bartowski/Phi-3.5-mini-instruct-GGUF", "quant": "Q4_K_M"},
               {"name": "gone", "file": "gone.gguf"}
             ]}
            """
        try Data(registry.utf8).write(to: dir.appendingPathComponent("registry.json"))
        return dir
    }

    static func catalog(_ dir: URL) throws -> ModelCatalog {
        ModelCatalog(registry: try ModelRegistry.load(dir.appendingPathComponent("registry.json")), directory: dir)
    }

    @Test func theBuiltInRegistryIsTheCheckoutsRegistry() throws {
        let checkout = try ModelRegistry.load(Fixtures.root.appendingPathComponent("models/registry.json"))
        #expect(ModelRegistry.builtIn.default == checkout.default)
        #expect(ModelRegistry.builtIn.models == checkout.models, "update Sources/HearthHub/ModelRegistry+BuiltIn.swift from models/registry.json")
        #expect(!ModelRegistry.builtIn.models.isEmpty)
    }

    @Test func namesResolveToFilesAndHubReferences() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let catalog = try Self.catalog(dir)
        let installed = dir.appendingPathComponent("small.gguf").path

        guard case .local(let path) = try catalog.target("small") else { Issue.record("small is installed"); return }
        #expect(path == installed)
        guard case .local(let direct) = try catalog.target(installed) else { Issue.record("a path is a path"); return }
        #expect(direct == installed)
        guard case .local(let byDefault) = try catalog.defaultTarget() else { Issue.record("the default is installed"); return }
        #expect(byDefault == installed)

        guard case .hub(let pinned, let pins) = try catalog.target("small-hub") else { Issue.record("small-hub is on the hub"); return }
        #expect(pinned.repo.id == "org/small-GGUF" && pinned.file == "small.gguf")
        #expect(pins?.bytes == 16 && pins?.sha256 == String(repeating: "ab", count: 32))
        guard case .hub(let phi, nil) = try catalog.target("phi-ish") else { Issue.record("phi-ish is on the hub"); return }
        #expect(phi.description == "bartowski/Phi-3.5-mini-instruct-GGUF:Q4_K_M")
        guard case .hub(let named, nil) = try catalog.target("bartowski/Phi-3.5-mini-instruct-GGUF:Q4_K_M") else {
            Issue.record("org/repo:QUANT is a hub reference")
            return
        }
        #expect(named == phi)
    }

    @Test func theDefaultModelFallsBackToItsHubTwin() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        // No installed files: the default resolves to the hub entry with the same sha256.
        let catalog = ModelCatalog(registry: try Self.catalog(dir).registry, directory: nil)
        guard case .hub(let reference, let pins) = try catalog.defaultTarget() else { Issue.record("the twin is on the hub"); return }
        #expect(reference.repo.id == "org/small-GGUF" && pins?.bytes == 16)
    }

    @Test func namesThatResolveToNothingAreTypedReadableErrors() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let catalog = try Self.catalog(dir)

        let unknown = #expect(throws: ModelNameError.self) { try catalog.target("no-such-model") }
        #expect(unknown?.code == .unknownName)
        #expect(unknown?.localizedDescription == "no model file or folder at no-such-model, and it is not a model name")
        #expect(unknown?.recoverySuggestion?.contains("small, small-hub, phi-ish, gone") == true)
        #expect(unknown.map { "\($0)" }?.hasPrefix("no model file or folder at no-such-model, and it is not a model name: give a path") == true)

        let missing = #expect(throws: ModelNameError.self) { try catalog.target("./nothing-here.gguf") }
        #expect(missing?.code == .missingPath && missing?.localizedDescription == "model path does not exist: ./nothing-here.gguf")

        let gone = #expect(throws: ModelNameError.self) { try catalog.target("gone") }
        #expect(gone?.code == .notInstalled && gone?.localizedDescription.contains("gone") == true)

        let none = #expect(throws: ModelNameError.self) { try ModelCatalog(registry: nil, directory: nil).defaultTarget() }
        #expect(none?.code == .noDefaultModel && none?.recoverySuggestion?.isEmpty == false)

        for error in [unknown, missing, gone, none].compactMap({ $0 }) {
            #expect(!error.localizedDescription.contains("couldn’t be completed") && !error.localizedDescription.contains("couldn't be completed"))
        }
    }

    @Test func anInstalledFileOfAnotherSizeIsRefused() throws {
        let dir = try Self.folder(installedBytes: 15, pinnedBytes: 16)
        defer { try? FileManager.default.removeItem(at: dir) }
        let error = #expect(throws: ModelNameError.self) { try Self.catalog(dir).target("small") }
        #expect(error?.code == .installedFileMismatch)
        #expect(error?.localizedDescription == "the installed file of small has 15 bytes, models/registry.json pins 16")
    }

    @Test func theStandardCatalogFollowsHearthModelsElseTheBuiltInTable() throws {
        let dir = try Self.folder()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fromEnvironment = ModelCatalog.standard(environment: ["HEARTH_MODELS": dir.path], executable: nil)
        #expect(fromEnvironment.defaultName == "small")
        #expect(fromEnvironment.directory?.standardizedFileURL.path == dir.standardizedFileURL.path)
        let builtIn = ModelCatalog.standard(environment: [:], executable: nil)
        #expect(builtIn.directory == nil && builtIn.defaultName == ModelRegistry.builtIn.default && builtIn.defaultName != nil)
    }

    /// Every hub failure renders as a sentence and a remedy, never the token.
    @Test func hubErrorsAreLocalized() {
        let codes: [HubError.Code] = [
            .unauthorized, .gated, .repositoryNotFound, .revisionNotFound, .fileNotFound, .checksumMismatch, .sizeMismatch, .network,
            .server, .invalidResponse, .notCached, .invalidReference, .noMatchingFile, .ambiguousFile, .fileSystem,
        ]
        var remedies: Set<String> = []
        for code in codes {
            let error = HubError(code, "org/repo failed (\(code.rawValue))")
            #expect(error.localizedDescription == "org/repo failed (\(code.rawValue))")
            let remedy = error.recoverySuggestion ?? ""
            #expect(!remedy.isEmpty && !remedy.contains("hf_"))
            remedies.insert(remedy)
        }
        #expect(remedies.count == codes.count - 1, "checksum and size mismatch share one; the rest are distinct")
        #expect(HubError(.network, "down", remedy: "try later").recoverySuggestion == "try later")
    }
}
