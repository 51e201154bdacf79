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

    /// The default model: its installed file (`models/` of the checkout, or `$HEARTH_MODELS`),
    /// else the registry entry that names the same file on the hub (same sha256), which is
    /// pulled into the hub cache and verified on first use — so an installed binary with no
    /// checkout gets it too. An error says how to install it when neither is possible.
    static func target() throws -> ModelNames.Target {
        guard let registry = ModelNames.registry(), let name = registry.default, let entry = registry.entry(name) else {
            throw ValidationError(
                "no --model given and no model registry with a default model (looked in $HEARTH_MODELS, the models/ of the checkout this binary was built in, and the registry built into it); pass --model PATH or set HEARTH_MODELS")
        }
        if let dir = directory(), let file = entry.file, let path = installedPath(file, in: dir),
            FileManager.default.fileExists(atPath: path)
        {
            try checkInstalled(path, name: name, bytes: entry.bytes)
            return .local(path)
        }
        if let twin = registry.models.first(where: { $0.reference != nil && $0.sha256 != nil && $0.sha256 == entry.sha256 }),
            let reference = twin.reference
        {
            return .hub(reference, ExpectedFile(bytes: twin.bytes, sha256: twin.sha256))
        }
        throw ValidationError(
            "the default model \(printableName(name)) is not installed: run scripts/fetch-default-model.sh (or scripts/setup.sh) in a checkout, or pass --model")
    }
}
