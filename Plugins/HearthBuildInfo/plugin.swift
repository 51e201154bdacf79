import Foundation
import PackagePlugin

/// Writes two files for the `hearth` executable: `BuildCommit.swift`, the git description of the
/// checkout it is built from (`git describe --tags --always --dirty`: the last version tag, the
/// commits since, the commit, and `-dirty` for uncommitted changes; `unknown` outside a git
/// checkout), which `hearth --version` prints; and `EmbeddedRegistry.swift`, the text of
/// `models/registry.json`, so an installed binary knows the short names and the default model
/// without the checkout. Each is rewritten only when its content changes, so a build with
/// nothing new recompiles nothing.
@main
struct HearthBuildInfo: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("generated")
        let script = """
            set -e
            mkdir -p "$2"
            described=$(git -C "$1" describe --tags --always --dirty 2>/dev/null || echo unknown)
            printf '/// The git checkout this binary was built from (written by the HearthBuildInfo plugin).\\nlet buildCommit = "%s"\\n' "$described" > "$2/BuildCommit.swift.new"
            if cmp -s "$2/BuildCommit.swift.new" "$2/BuildCommit.swift"; then rm "$2/BuildCommit.swift.new"; else mv "$2/BuildCommit.swift.new" "$2/BuildCommit.swift"; fi
            { printf '/// models/registry.json as it was at build time (written by the HearthBuildInfo plugin).\nlet embeddedRegistry = ####\"\"\"\n'; cat "$1/models/registry.json"; printf '\n\"\"\"####\n'; } > "$2/EmbeddedRegistry.swift.new"
            if cmp -s "$2/EmbeddedRegistry.swift.new" "$2/EmbeddedRegistry.swift"; then rm "$2/EmbeddedRegistry.swift.new"; else mv "$2/EmbeddedRegistry.swift.new" "$2/EmbeddedRegistry.swift"; fi
            """
        return [
            .prebuildCommand(
                displayName: "Hearth build info (git describe)", executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", script, "sh", context.package.directoryURL.path, output.path],
                outputFilesDirectory: output)
        ]
    }
}
