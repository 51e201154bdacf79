import ArgumentParser
import Foundation
import HearthHub

/// Finds `models/registry.json` and the default model it names (installed by
/// `scripts/fetch-default-model.sh`, which the README's setup command runs), through the
/// library's ``ModelCatalog`` with the CLI's messages (`--model`).
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

    /// The running executable's absolute path (``ModelCatalog/defaultExecutable()``): the
    /// kernel's, never `argv[0]` taken relative to the working directory, which for a `hearth`
    /// found on `PATH` would make the walk up start in the working directory.
    static func executableURL() -> URL? { ModelCatalog.defaultExecutable() }

    /// The default model: its installed file (`models/` of the checkout, or `$HEARTH_MODELS`),
    /// else the registry entry that names the same file on the hub (same sha256), which is
    /// pulled into the hub cache and verified on first use — so an installed binary with no
    /// checkout gets it too. An error says how to install it when neither is possible.
    static func target() throws -> ModelNames.Target {
        do { return try ModelNames.catalog().defaultTarget() } catch {
            switch error.code {
            case .noDefaultModel:
                throw ValidationError(
                    "no --model given and no model registry with a default model (looked in $HEARTH_MODELS, the models/ of the checkout this binary was built in, and the registry built into it); pass --model PATH or set HEARTH_MODELS")
            case .notInstalled:
                throw ValidationError(
                    "the default model \(printableName(error.name)) is not installed: run scripts/fetch-default-model.sh (or scripts/setup.sh) in a checkout, or pass --model")
            case .unknownName, .missingPath, .installedFileMismatch:
                throw ValidationError(error.description)
            }
        }
    }
}
