import ArgumentParser
import Foundation
import HearthEngine

@main
struct Hearth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth",
        abstract: "A pure-Swift, CPU-only inference engine for Phi-style language models.",
        subcommands: [
            Generate.self, Tokenize.self, Embed.self, Inspect.self, Quantize.self, Bench.self, BenchStructured.self, BenchTokenizer.self, BenchTemplate.self,
            Perplexity.self, Chat.self,
            Serve.self, Pull.self, ListModels.self, RemoveModel.self,
        ])
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
