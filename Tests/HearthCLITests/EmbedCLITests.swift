import Foundation
import HearthTestSupport
import Testing

/// `hearth embed`: the JSON scripts read.
@Suite struct EmbedCLITests {
    struct Output: Decodable {
        struct Item: Decodable {
            let index: Int
            let embedding: [Float]
        }
        struct Usage: Decodable { let prompt_tokens: Int }
        let model: String
        let dimensions: Int
        let data: [Item]
        let usage: Usage
    }

    static func run(_ binary: String, _ arguments: [String]) throws -> (status: Int32, stdout: Data, stderr: String) {
        let result = try runProcess(URL(fileURLWithPath: binary), arguments)
        return (result.status, result.stdout, String(decoding: result.stderr, as: UTF8.self))
    }

    static func debugBinary() throws -> String {
        guard let binary = CLITests.binary else { throw CLITestError.binaryNotFound }
        return binary.path
    }


    @Test func printsOneVectorPerTextAsJSON() throws {
        let model = Fixtures.checkpoint("phi3-mha").path
        let texts = ["The fire is a small promise.", "Bread.", "我们一边喝茶"]
        var arguments = ["embed", "--model", model, "--threads", "2"]
        for text in texts { arguments += ["--text", text] }
        let result = try Self.run(try Self.debugBinary(), arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(String(decoding: result.stdout, as: UTF8.self).hasSuffix("}\n"))
        let output = try JSONDecoder().decode(Output.self, from: result.stdout)
        #expect(output.dimensions == 64 && !output.model.isEmpty)
        #expect(output.data.map(\.index) == [0, 1, 2])
        for item in output.data {
            #expect(item.embedding.count == 64)
            #expect(abs(item.embedding.reduce(0) { $0 + Double($1) * Double($1) } - 1) < 1e-4)
        }
        let tokens = try texts.map { text in
            let ids = try Self.run(try Self.debugBinary(), ["tokenize", "--model", model, "--text", text])
            return try JSONDecoder().decode([Int].self, from: ids.stdout).count
        }
        #expect(output.usage.prompt_tokens == tokens.reduce(0, +))

        // --pooling last gives other vectors; the second text alone gives its vector again.
        let last = try Self.run(try Self.debugBinary(), arguments + ["--pooling", "last"])
        let lastOutput = try JSONDecoder().decode(Output.self, from: last.stdout)
        #expect(cosineSimilarity(lastOutput.data[0].embedding, output.data[0].embedding) < 0.99)
        let alone = try Self.run(try Self.debugBinary(), ["embed", "--model", model, "--text", texts[1], "-t", "2"])
        let aloneOutput = try JSONDecoder().decode(Output.self, from: alone.stdout)
        #expect(cosineSimilarity(aloneOutput.data[0].embedding, output.data[1].embedding) >= 0.99999)
    }

    @Test func refusesBadArguments() throws {
        let model = Fixtures.checkpoint("phi3-mha").path
        let none = try Self.run(try Self.debugBinary(), ["embed", "--model", model])
        #expect(none.status != 0 && none.stderr.contains("--text"))
        let pooling = try Self.run(try Self.debugBinary(), ["embed", "--model", model, "--text", "x", "--pooling", "max"])
        #expect(pooling.status != 0)
        let long = try Self.run(try Self.debugBinary(), ["embed", "--model", model, "--text", String(repeating: "one two three four five six ", count: 5), "--ctx", "16"])
        #expect(long.status == 1 && long.stderr.contains("context"), "\(long.stderr)")
        #expect(long.stdout.isEmpty)
        let help = try Self.run(try Self.debugBinary(), ["embed", "--help"])
        for flag in ["--model", "--text", "--pooling", "--threads", "--ctx", "--batch"] {
            #expect(String(decoding: help.stdout, as: UTF8.self).contains(flag))
        }
    }

    /// The default model (release binary): 16 texts of about 64 tokens in one call give the
    /// vectors each gives alone, and a text embedded with others keeps its vector.
    @Test(.enabled(if: RealModel.available, "the default model or the release binary is not installed"))
    func defaultModelVectorsDoNotDependOnTheBatch() throws {
        let texts = (0..<16).map { i in
            (0..<(10 + i % 5)).map { "word\(($0 * 7 + i * 3) % 23) lamp" }.joined(separator: " ") + " ending \(i)."
        }
        var arguments = ["embed", "--model", RealModel.model, "-t", "2"]
        for text in texts { arguments += ["--text", text] }
        let together = try Self.run(RealModel.binary, arguments)
        #expect(together.status == 0, "\(together.stderr)")
        let output = try JSONDecoder().decode(Output.self, from: together.stdout)
        #expect(output.dimensions == 640 && output.data.count == 16)
        for i in [0, 7, 15] {
            let alone = try Self.run(RealModel.binary, ["embed", "--model", RealModel.model, "-t", "2", "--text", texts[i]])
            let vector = try JSONDecoder().decode(Output.self, from: alone.stdout).data[0].embedding
            let c = cosineSimilarity(vector, output.data[i].embedding)
            #expect(c >= 0.99999, "text \(i): cos \(c)")
        }
        #expect(cosineSimilarity(output.data[0].embedding, output.data[1].embedding) < 0.9999, "different texts, different vectors")
    }
}
