import ArgumentParser
import Foundation
import HearthHub

/// `hearth pull`: fetches a model from the Hugging Face hub into its shared cache (docs/MODELS.md).
struct Pull: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a model from the Hugging Face hub into the shared cache, verified and resumable.",
        discussion: """
            REPO[:QUANT] takes the GGUF file whose name carries QUANT (Q4_K_M when none is given; \
            all parts of a split file); a repository without GGUF files is taken as a safetensors \
            checkpoint (config, tokenizer files and the shards its index names). A short name from \
            models/registry.json works too. Files go to the hub cache Python tools use \
            ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub); every file's sha256 \
            (or git blob id) is checked before it is linked; an interrupted download resumes. \
            HF_ENDPOINT, HF_TOKEN and HF_HUB_OFFLINE are honoured. Prints the path to load.
            """)

    @Argument(help: "The model: ORG/REPO[:QUANT], or a short name from models/registry.json (phi3-mini, phi4-mini, …).")
    var name: String

    @Option(name: .long, help: "Branch, tag or commit to fetch (default: main, or the registry's).")
    var revision: String?

    @Option(name: .long, help: "Fetch this file of the repository (and the other parts of a split GGUF) instead of choosing by quant.")
    var file: String?

    @Flag(name: .long, help: "Print the result as one line of JSON: name, repo, commit, format, quant, files, path.")
    var json = false

    func run() async throws {
        var pins: ExpectedFile?
        var reference: ModelReference
        switch try ModelNames.target(name) {
        case .local(let path):
            throw ValidationError("\(printableName(name)) is a local path (\(printableName(path))), not a model name to pull")
        case .hub(let ref, let expected):
            reference = ref
            pins = expected
        }
        if let revision { reference.revision = revision }
        if let file {
            reference.file = file
            pins = nil
        }
        do {
            // A bar per file on a terminal; with --json, only the line per file (as off a terminal).
            let progress = TransferProgress(label: reference.repo.id, bars: !json)
            let hub = HubModels(environment: .current(), progress: { progress.report($0) })
            let model = try await hub.pull(reference, expected: pins)
            if json {
                struct Output: Encodable { let name, repo, commit, format: String; let quant: String?; let files: [String]; let path: String }
                emit(try jsonLine(Output(
                    name: reference.description, repo: model.repo.id, commit: model.commit, format: model.format.rawValue, quant: model.quant,
                    files: model.files, path: model.path.path)))
            } else {
                // Names with control characters were refused on the way in; the cache root
                // (the environment's) is escaped too, so nothing printed acts on the terminal.
                emit(printableName(model.path.path) + "\n")
            }
        } catch let error as HubError {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// `hearth list`: the models in the hub cache.
struct ListModels: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the models in the Hugging Face cache: name, quant, size, location, last used.",
        discussion: "Models fetched by Python tools (huggingface_hub, transformers) are listed too: the cache is shared.")

    @Flag(name: .long, help: "Print a JSON array: name, repo, commit, refs, format, quant, bytes, path, last_used (ISO 8601), files.")
    var json = false

    func run() throws {
        let models = HubModels(environment: .current()).installed()
        if json {
            struct Row: Encodable {
                let name, repo, commit: String
                let refs: [String]
                let format: String
                let quant: String?
                let bytes: Int64
                let path: String
                let last_used: String?
                let files: [String]
            }
            let iso = ISO8601DateFormatter()
            let rows = models.map {
                Row(name: $0.name, repo: $0.repo.id, commit: $0.commit, refs: $0.refs, format: $0.format.rawValue, quant: $0.quant,
                    bytes: $0.bytes, path: $0.path.path, last_used: $0.lastUsed.map(iso.string(from:)), files: $0.files)
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys, .prettyPrinted]
            emit(String(decoding: try encoder.encode(rows), as: UTF8.self) + "\n")
            return
        }
        guard !models.isEmpty else {
            emit("No models in \(printableName(HubEnvironment.current().cacheDirectory.path)). Fetch one with `hearth pull ORG/REPO[:QUANT]`.\n")
            return
        }
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        let header = ["NAME", "QUANT", "SIZE", "LAST USED", "LOCATION"]
        let rows = models.map { model -> [String] in
            let stale = model.refs.isEmpty ? " (commit \(model.commit.prefix(7)))" : ""
            return [model.name + stale, model.quant ?? (model.format == .safetensors ? "safetensors" : "-"),
                TransferProgress.size(model.bytes), model.lastUsed.map(formatter.string(from:)) ?? "-", model.path.path
            ].map(printableName)
        }
        let widths = (0..<header.count - 1).map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        for row in [header] + rows {
            let padded = row.enumerated().map { index, cell in
                index < widths.count ? cell.padding(toLength: widths[index], withPad: " ", startingAt: 0) : cell
            }
            emit(padded.joined(separator: "  ") + "\n")
        }
    }
}

/// `hearth rm`: removes a model from the hub cache.
struct RemoveModel: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Remove a model from the Hugging Face cache: its snapshot files, and the blobs no other snapshot uses.",
        discussion: "ORG/REPO:QUANT removes that GGUF model only; ORG/REPO removes every snapshot of the repository.")

    @Argument(help: "The model, as `hearth list` names it: ORG/REPO[:QUANT], ORG/REPO/FILE, or a short name from models/registry.json.")
    var name: String

    func run() throws {
        let reference: ModelReference
        if let entry = ModelNames.registry()?.entry(name), let ref = entry.reference {
            reference = ref
        } else if let ref = ModelReference(parsing: name) {
            reference = ref
        } else {
            // ORG/REPO/FILE, as `hearth list` names a GGUF file without a quant tag.
            let parts = name.split(separator: "/", maxSplits: 2).map(String.init)
            guard parts.count == 3, let repo = RepoID(parts[0] + "/" + parts[1]) else {
                throw ValidationError("\(printableName(name)) is not a model name: give ORG/REPO[:QUANT] as `hearth list` shows it")
            }
            reference = ModelReference(repo: repo, file: parts[2])
        }
        do {
            let (removed, freed) = try HubModels(environment: .current()).remove(reference)
            for model in removed { emit("removed \(model.name) (commit \(model.commit.prefix(7)))\n") }
            emit("freed \(TransferProgress.size(freed))\n")
        } catch let error as HubError {
            FileHandle.standardError.write(Data("error: \(error)\n".utf8))
            throw ExitCode(1)
        }
    }
}
