import ArgumentParser
import Foundation
import HearthEngine
import HearthKernels

/// Hearth's semantic version (CHANGELOG.md; the release is tagged `v` + this).
let hearthVersion = "0.1.0"

@main
struct Hearth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth",
        abstract: "A pure-Swift, CPU-only inference engine for Phi-style language models.",
        // `hearth --version`: the version, the git description of the build, the kernel level.
        version: "hearth \(hearthVersion) (\(buildCommit)), kernels \(KernelLevel.current.rawValue)",
        subcommands: [
            Generate.self, Tokenize.self, Embed.self, Inspect.self, Quantize.self, Bench.self, BenchStructured.self, BenchTokenizer.self, BenchTemplate.self,
            Perplexity.self, Chat.self,
            Serve.self, Pull.self, ListModels.self, RemoveModel.self, Run.self, Show.self, PS.self,
        ])
}

extension Hearth {
    /// Parses and runs the command as ArgumentParser's `main()` does, after adding `hearth
    /// serve`'s `HEARTH_*` environment fallbacks (``EnvironmentFallbacks``) to its arguments.
    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        do {
            if arguments.first == "serve" {
                let rest = try EnvironmentFallbacks.apply(
                    to: Array(arguments.dropFirst()), options: EnvironmentFallbacks.options(of: Serve.self),
                    environment: ProcessInfo.processInfo.environment)
                arguments = ["serve"] + rest
            }
            var command = try parseAsRoot(arguments)
            if var command = command as? AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }
}

/// Runs a command body, printing Hearth's typed errors as one clear line on stderr and
/// exiting non-zero instead of trapping.
func reportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let exit as ExitCode {
        throw exit
    } catch {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        throw ExitCode(1)
    }
}

/// Writes text to stdout immediately (tokens stream as they are generated).
func emit(_ text: String) {
    FileHandle.standardOutput.write(Data(text.utf8))
}

/// Encodes a value as one line of JSON.
func jsonLine<T: Encodable>(_ value: T) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
    encoder.nonConformingFloatEncodingStrategy = .convertToString(
        positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
    return String(decoding: try encoder.encode(value), as: UTF8.self) + "\n"
}
