import ArgumentParser
import Foundation

/// Finds the default model named by `models/registry.json` (installed by
/// `scripts/fetch-default-model.sh`, which the README's setup command runs).
enum DefaultModel {
    /// The models directory: `$HEARTH_MODELS`, else `./models`, else the `models/` next to the
    /// checkout this binary was built in.
    static func directory() -> URL? {
        let fm = FileManager.default
        if let env = ProcessInfo.processInfo.environment["HEARTH_MODELS"], !env.isEmpty {
            return URL(fileURLWithPath: env)
        }
        let cwd = URL(fileURLWithPath: fm.currentDirectoryPath).appendingPathComponent("models")
        if fm.fileExists(atPath: cwd.appendingPathComponent("registry.json").path) { return cwd }
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<6 {
            let candidate = dir.appendingPathComponent("models")
            if fm.fileExists(atPath: candidate.appendingPathComponent("registry.json").path) { return candidate }
            dir.deleteLastPathComponent()
        }
        return nil
    }

    /// The default model's path, or an error saying how to install it.
    static func path() throws -> String {
        struct Registry: Decodable {
            struct Entry: Decodable { let name: String, file: String? }
            let `default`: String
            let models: [Entry]
        }
        guard let dir = directory(),
            let data = FileManager.default.contents(atPath: dir.appendingPathComponent("registry.json").path),
            let registry = try? JSONDecoder().decode(Registry.self, from: data),
            let file = registry.models.first(where: { $0.name == registry.default })?.file ?? nil
        else {
            throw ValidationError("no --model given and no models/registry.json found; pass --model PATH or set HEARTH_MODELS")
        }
        let path = dir.appendingPathComponent(file).path
        guard FileManager.default.fileExists(atPath: path) else {
            throw ValidationError("the default model \(registry.default) is not installed: run scripts/fetch-default-model.sh (or scripts/setup.sh)")
        }
        return path
    }
}
