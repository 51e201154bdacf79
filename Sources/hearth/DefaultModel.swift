import ArgumentParser
import Foundation
import HearthHub

/// Finds `models/registry.json` and the default model it names (installed by
/// `scripts/fetch-default-model.sh`, which the README's setup command runs).
///
/// The registry is looked for in two places only (docs/MODELS.md, "The registry"):
/// `$HEARTH_MODELS` when it is set, else the `models/` folder of the checkout this binary was
/// built in. Never the working directory: a `models/registry.json` in whatever folder `hearth`
/// is run from must not rename short names to other repositories or swap the default model.
enum DefaultModel {
    /// The models directory: `$HEARTH_MODELS`, else the `models/` next to the checkout this
    /// binary was built in (``ModelRegistry/directory(environment:executable:)``); nil when
    /// neither holds a registry.
    static func directory() -> URL? {
        ModelRegistry.directory(environment: ProcessInfo.processInfo.environment, executable: executableURL())
    }

    /// The running executable's absolute path: the kernel's (`/proc/self/exe`, via
    /// Foundation) — never `argv[0]` taken relative to the working directory, which for a
    /// `hearth` found on `PATH` would make the walk up start in the working directory.
    static func executableURL() -> URL? {
        if let url = Bundle.main.executableURL, url.path.hasPrefix("/") { return url }
        let argument = CommandLine.arguments.first ?? ""
        return argument.hasPrefix("/") ? URL(fileURLWithPath: argument) : nil
    }

    /// The path of `file`, a registry entry's file installed in `directory`
    /// (``ModelRegistry/installedPath(_:in:)``).
    static func installedPath(_ file: String, in directory: URL) -> String? {
        ModelRegistry.installedPath(file, in: directory)
    }

    /// Checks an installed registry file against the entry's pinned size (`bytes`): cheap, and
    /// it catches a different or truncated file. (Its sha256 was checked when
    /// `scripts/fetch-default-model.sh` installed it; hashing it on every start would cost
    /// more than loading it.)
    static func checkInstalled(_ path: String, name: String, bytes: Int64?) throws {
        guard let bytes else { return }
        // The file a link (a worktree's models/ may link to another checkout's) points to.
        let real = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let size = (try? FileManager.default.attributesOfItem(atPath: real)[.size] as? Int).map { Int64($0) }
        guard size == bytes else {
            throw ValidationError(
                "the installed file of \(printableName(name)) has \(size.map { "\($0)" } ?? "no") bytes, models/registry.json pins \(bytes): run scripts/fetch-default-model.sh to install it again")
        }
    }

    /// The default model's path, or an error saying how to install it.
    static func path() throws -> String {
        struct Registry: Decodable {
            struct Entry: Decodable { let name: String, file: String?, bytes: Int64? }
            let `default`: String
            let models: [Entry]
        }
        guard let dir = directory(),
            let data = FileManager.default.contents(atPath: dir.appendingPathComponent("registry.json").path),
            let registry = try? JSONDecoder().decode(Registry.self, from: data),
            let entry = registry.models.first(where: { $0.name == registry.default }), let file = entry.file,
            let path = installedPath(file, in: dir)
        else {
            throw ValidationError(
                "no --model given and no models/registry.json found (looked in $HEARTH_MODELS, else the models/ of the checkout this binary was built in); pass --model PATH or set HEARTH_MODELS")
        }
        guard FileManager.default.fileExists(atPath: path) else {
            throw ValidationError("the default model \(printableName(registry.default)) is not installed: run scripts/fetch-default-model.sh (or scripts/setup.sh)")
        }
        try checkInstalled(path, name: registry.default, bytes: entry.bytes)
        return path
    }
}
