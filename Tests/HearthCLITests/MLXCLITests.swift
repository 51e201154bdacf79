import Foundation
import HearthTestSupport
import Testing

extension CLITests {
    /// An MLX 4-bit conversion: inspect says what the load did; generate runs it greedily.
    @Test func mlxCheckpointInspectsAndGenerates() throws {
        let path = Fixtures.checkpoint("mlx-phi3-q4-g64").path
        let inspect = try hearth(["inspect", "--model", path])
        #expect(inspect.status == 0, "\(inspect.stderr)")
        for needle in ["weights:         q4_1", "quantization:    MLX 10 × affine 4-bit, group 64; scales/biases F16 → f16 exact"] {
            #expect(inspect.stdout.contains(needle), "missing \(needle) in \(inspect.stdout)")
        }
        let prompt = try Fixtures.reference("mlx-phi3-q4-g64").prompts[0]
        let generate = try hearth([
            "generate", "--model", path, "--prompt", prompt.text, "--raw", "--temperature", "0", "--max-tokens", "16", "--json",
        ])
        #expect(generate.status == 0, "\(generate.stderr)")
        let ids = generate.stdout.split(separator: "\n").compactMap { line -> Int32? in
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return (object?["id"] as? Int).map(Int32.init)
        }
        #expect(ids == prompt.greedy)
    }
}
