import Foundation
import Testing

/// One options path: the options every model-running command shares are declared once, as
/// option groups in `Sources/hearth/ModelOptions.swift`, never again in a command's file; and
/// the commands that take them show the same help.
@Suite struct OptionDeclarationTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/hearth")

    /// The shared options (as `--long` names) and the group that declares each.
    static let shared = [
        "model": "ModelOption", "quantize": "ModelOptions", "tokenizer": "ModelOptions", "threads": "ThreadsOption",
        "ctx": "ContextOption", "batch": "BatchOption", "kv-type": "KVTypeOption", "prefill-path": "KernelOptions",
        "activation-bits": "ActivationOption", "temperature": "SamplingFlags", "top-k": "SamplingFlags",
        "top-p": "SamplingFlags", "min-p": "SamplingFlags", "repeat-penalty": "SamplingFlags", "seed": "SamplingFlags",
        "max-tokens": "MaxTokensOption",
    ]

    /// Declarations that share a name but not the meaning, each with its reason.
    static let distinct: Set<String> = [
        "Serve.swift model",  // repeatable (several models), with ModelOption.help plus one sentence
        "Perplexity.swift ctx",  // the scoring chunk, as llama-perplexity's -c (default 512 or the base file's)
        "Serve.swift max-tokens",  // a default for requests that set none, not a reply cap of the command
    ]

    /// `(file, long name)` of every `@Option`/`@Flag` in the CLI's sources.
    static func declarations() throws -> [(file: String, name: String)] {
        var found: [(String, String)] = []
        let pattern = try NSRegularExpression(pattern: #"@(?:Option|Flag)\(([^\n]*)\)\s*\n\s*var (\w+)"#)
        for file in try FileManager.default.contentsOfDirectory(atPath: sources.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                guard let args = Range(match.range(at: 1), in: text), let name = Range(match.range(at: 2), in: text) else { continue }
                let custom = text[args].firstMatch(of: /customLong\("([^"]+)"\)/).map { String($0.1) }
                let kebab = text[name].reduce(into: "") { out, c in out += c.isUppercase ? "-" + c.lowercased() : String(c) }
                found.append((file, custom ?? kebab))
            }
        }
        return found
    }

    @Test func sharedOptionsAreDeclaredOnceInTheirGroup() throws {
        let all = try Self.declarations()
        #expect(all.count > 40, "the scan found \(all.count) declarations")
        for (name, group) in Self.shared {
            let places = all.filter { $0.name == name }.map(\.file)
            let own = places.filter { $0 == "ModelOptions.swift" }
            let elsewhere = places.filter { $0 != "ModelOptions.swift" && !Self.distinct.contains("\($0) \(name)") }
            #expect(own.count == 1, "--\(name) (\(group)) is declared \(own.count) times in ModelOptions.swift")
            #expect(elsewhere.isEmpty, "--\(name) is declared again in \(elsewhere)")
        }
        let groups = try String(contentsOf: Self.sources.appendingPathComponent("ModelOptions.swift"), encoding: .utf8)
        for group in Set(Self.shared.values) { #expect(groups.contains("struct \(group): ParsableArguments")) }
    }
}

extension OptionDeclarationTests {
    func hearth(_ arguments: [String]) throws -> CLITests.Result { try CLITests().hearth(arguments) }

    /// Every command that runs a model shows `--model` and `--batch` with the one help text and
    /// default, and the shared checks refuse bad values the same way in each.
    @Test func commandsShowAndCheckTheSharedOptionsAlike() throws {
        let modelHelp = "--model <model> The model: a path (a Hugging Face checkpoint directory, a .gguf file, or a .hqf file "
            + "from `hearth quantize`), a Hugging Face repository ORG/REPO[:QUANT] (from the shared cache, pulled if missing), "
            + "or a short name from models/registry.json (default: the registry's default model)."
        for command in ["generate", "chat", "serve", "bench", "embed", "perplexity", "inspect", "tokenize", "quantize"] {
            let help = try hearth([command, "--help"])
            #expect(help.status == 0, "\(command)")
            let flat = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(flat.contains(modelHelp), "\(command) --help: \(flat.prefix(400))")
            if ["generate", "chat", "serve", "bench", "embed"].contains(command) {
                #expect(flat.contains("(default 512, llama.cpp's micro-batch)"), "\(command) --batch default")
            }
        }

        for command in [["serve"], ["chat"], ["generate", "--prompt", "x"], ["embed", "--text", "x"], ["bench"]] {
            if command != ["bench"] {  // bench sizes its cache for -p and -n
                let ctx = try hearth(command + ["--ctx", "8"])
                #expect(ctx.status != 0 && ctx.stderr.contains("--ctx must be at least 16"), "\(command): \(ctx.stderr)")
            }
            let batch = try hearth(command + ["--batch", "0"])
            #expect(batch.status != 0 && batch.stderr.contains("--batch must be between 1 and 4096"), "\(command): \(batch.stderr)")
        }
        // bench's --quantize is the shared one, with its check of the quantization plan.
        let quantize = try hearth(["bench", "--quantize", "q5_0"])
        #expect(quantize.status != 0 && quantize.stderr.contains("--quantize takes q4_0, q4_1 or q8_0"), "\(quantize.stderr)")
        let prefill = try hearth(["serve", "--batch", "64", "--prefill-while-decoding", "128"])
        #expect(prefill.status != 0 && prefill.stderr.contains("--prefill-while-decoding must be between 1 and --batch"), "\(prefill.stderr)")
    }
}
