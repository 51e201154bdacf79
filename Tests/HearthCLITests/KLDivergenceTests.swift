import Foundation
import HearthTestSupport
import Testing

/// `hearth perplexity --save-logits` / `--kl-divergence-base` on a tiny checkpoint: zero against
/// itself, equal to numpy's direct computation (scripts/kld_numpy.py) on the same two files,
/// and typed errors for bases from another model, vocabulary, text or context, or truncated.
@Suite struct KLDivergenceTests {
    static let model = Fixtures.checkpoint("phi3-mha").path
    static let text = Fixtures.directory.appendingPathComponent("corpus.txt").path
    /// 3 chunks of 64 tokens, every position scored: 189 positions.
    static let run = ["--file", text, "--ctx", "64", "--chunks", "3", "--first", "0", "-t", "2", "--json"]

    let cli = CLITests()
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-kld-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Runs `hearth perplexity` and returns its JSON object.
    func perplexity(_ arguments: [String], model: String = model) throws -> [String: Any] {
        let result = try cli.hearth(["perplexity", "--model", model] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    /// A base run keeping the whole distribution (1024 tokens) or its top `k`.
    func saveBase(_ name: String, topK: Int = 1024, extra: [String] = []) throws -> String {
        _ = try perplexity(Self.run + extra + ["--save-logits", path(name), "--logits-top-k", String(topK)])
        return path(name)
    }

    /// The python3 that has numpy: scripts/.venv (made by scripts/setup.sh when the system's lacks it) or python3.
    static var python: String? {
        let venv = Fixtures.root.appendingPathComponent("scripts/.venv/bin/python").path
        for candidate in [venv, "/usr/bin/env"] where FileManager.default.isExecutableFile(atPath: candidate) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: candidate)
            process.arguments = (candidate == venv ? [] : ["python3"]) + ["-c", "import numpy"]
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { continue }
            process.waitUntilExit()
            if process.terminationStatus == 0 { return candidate == venv ? venv : "python3" }
        }
        return nil
    }

    func numpy(_ base: String, _ current: String) throws -> [String: Any] {
        let python = try #require(Self.python, "numpy is missing: run scripts/setup.sh")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python == "python3" ? "/usr/bin/env" : python)
        process.arguments = (python == "python3" ? ["python3"] : [])
            + [Fixtures.root.appendingPathComponent("scripts/kld_numpy.py").path, base, current]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func number(_ object: [String: Any]?, _ key: String) -> Double {
        (object?[key] as? NSNumber)?.doubleValue ?? .nan
    }

    @Test func zeroAgainstItself() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        for k in [1024, 8] {
            let base = try saveBase("self-\(k).hlog", topK: k)
            let object = try perplexity(Self.run + ["--kl-divergence-base", base])
            let kld = object["kl_divergence"] as? [String: Any]
            #expect(Self.number(kld, "positions") == 189)
            #expect(Self.number(kld, "mean_kld") == 0, "K=\(k)")
            #expect(Self.number(kld, "max_kld") == 0, "K=\(k)")
            #expect(Self.number(kld, "same_top") == 1)
            #expect(Self.number(kld, "delta_perplexity") == 0)
            #expect(Self.number(kld, "mean_abs_delta_logprob") == 0)
            #expect(Self.number(kld, "perplexity") == Self.number(object, "perplexity"))
        }
    }

    /// Hearth's statistics for a q4_0 run against the f32 base equal numpy's from the two saved
    /// files — with the whole distribution and with the base cut to its top 8.
    @Test func matchesNumpy() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        for k in [1024, 8] {
            let base = try saveBase("f32-\(k).hlog", topK: k)
            let current = path("q4_0-\(k).hlog")
            let object = try perplexity(
                Self.run + ["--quantize", "q4_0", "--kl-divergence-base", base, "--save-logits", current, "--logits-top-k", "1024"])
            let ours = try #require(object["kl_divergence"] as? [String: Any])
            let reference = try numpy(base, current)
            #expect(Self.number(ours, "mean_kld") > 1e-4, "q4_0 is not the f32 model: the divergence cannot be zero")
            for key in ["mean_kld", "median_kld", "p99_kld", "max_kld", "base_perplexity", "perplexity",
                "delta_perplexity", "mean_abs_delta_logprob", "max_abs_delta_logprob"] {
                let a = Self.number(ours, key), b = Self.number(reference, key)
                #expect(abs(a - b) <= 1e-6 + 1e-5 * abs(b), "K=\(k) \(key): hearth \(a), numpy \(b)")
            }
            for key in ["positions", "same_top", "same_top_clear", "clear_positions"] {
                #expect(Self.number(ours, key) == Self.number(reference, key), "K=\(k) \(key)")
            }
        }
    }

    func failure(_ arguments: [String], model: String = model) throws -> String {
        let result = try cli.hearth(["perplexity", "--model", model] + arguments)
        #expect(result.status != 0)
        #expect(!result.stderr.contains("Fatal error"))
        return result.stderr
    }

    @Test func mismatchesAreNamed() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let base = try saveBase("base.hlog")
        // Another model of the same vocabulary (2 key/value heads instead of 4).
        let model = try failure(Self.run + ["--kl-divergence-base", base], model: Fixtures.checkpoint("phi3-gqa-longrope").path)
        #expect(model.contains("another model"), "\(model)")
        // Another vocabulary.
        let vocab = try failure(Self.run + ["--kl-divergence-base", base], model: Fixtures.checkpoint("phi2-tiny").path)
        #expect(vocab.contains("another vocabulary"), "\(vocab)")
        // Another context.
        let ctx = try failure(Self.run + ["--kl-divergence-base", base, "--ctx", "32"])
        #expect(ctx.contains("another context") && ctx.contains("--ctx 64"), "\(ctx)")
        // Another text.
        let other = path("other.txt")
        try String(repeating: "A different text about rivers and stones. ", count: 200).write(toFile: other, atomically: true, encoding: .utf8)
        let text = try failure(["--file", other, "--ctx", "64", "--chunks", "3", "--first", "0", "--kl-divergence-base", base])
        #expect(text.contains("another text"), "\(text)")
        // Truncated, and not a logits file at all.
        let data = try Data(contentsOf: URL(fileURLWithPath: base))
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: path("half.hlog")))
        let truncated = try failure(Self.run + ["--kl-divergence-base", path("half.hlog")])
        #expect(truncated.contains("truncated"), "\(truncated)")
        let damaged = try failure(Self.run + ["--kl-divergence-base", Self.text])
        #expect(damaged.contains("not a Hearth logits file"), "\(damaged)")
        // A hostile header whose sizes would overflow: refused, not a crash.
        let huge = 1 << 24
        let header = Data((
            "{\"architecture\":\"x\",\"model\":\"x\",\"layers\":1,\"hidden_size\":1,\"heads\":1,\"kv_heads\":1,"
                + "\"ffn_size\":1,\"vocab_size\":\(huge),\"vocabulary_hash\":\"0\",\"ctx\":\(huge),\"first\":0,"
                + "\"chunks\":\(huge),\"top_k\":\(huge)}").utf8)
        var hostile = Data("HRTHLG01".utf8)
        for value in [UInt32(1), UInt32(header.count)] { withUnsafeBytes(of: value.littleEndian) { hostile.append(contentsOf: $0) } }
        hostile.append(header)
        try hostile.write(to: URL(fileURLWithPath: path("hostile.hlog")))
        let overflow = try failure(Self.run + ["--kl-divergence-base", path("hostile.hlog")])
        #expect(overflow.contains("out of range"), "\(overflow)")
        // The base alone gives the tokens: no --file needed.
        let object = try perplexity(["--kl-divergence-base", base, "-t", "2", "--json"])
        #expect(Self.number(object["kl_divergence"] as? [String: Any], "mean_kld") == 0)
    }
}
