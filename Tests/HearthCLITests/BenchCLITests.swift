import Foundation
import HearthTestSupport
import Testing

/// `hearth bench` with llama-bench's depth (-d): the tests run after that many tokens are in the
/// cache, which is sized for them.
@Suite struct BenchCLITests {
    struct Report: Decodable {
        struct Stat: Decodable { let tokens_per_second: Double; let samples: [Double] }
        let pp: Stat?
        let tg: Stat?
        let depth: Int
        let prompt_tokens: Int
        let generated_tokens: Int
        let kv_cache_bytes: Int
    }

    func bench(_ arguments: [String]) throws -> CLITests.Result {
        try CLITests().hearth(["bench", "--model", Fixtures.checkpoint("phi3-mha").path, "-t", "2", "-r", "2"] + arguments)
    }

    @Test func depthRunsTheTestsFurtherIntoTheCache() throws {
        let plain = try bench(["-p", "8", "-n", "4", "--json"])
        let deep = try bench(["-p", "8", "-n", "4", "-d", "40", "--json"])
        #expect(plain.status == 0 && deep.status == 0, "\(plain.stderr) \(deep.stderr)")
        let a = try JSONDecoder().decode(Report.self, from: Data(plain.stdout.utf8))
        let b = try JSONDecoder().decode(Report.self, from: Data(deep.stdout.utf8))
        #expect(a.depth == 0 && b.depth == 40)
        // The cache holds d + p + n positions: 52 against 12.
        #expect(a.kv_cache_bytes > 0 && b.kv_cache_bytes * 12 == a.kv_cache_bytes * 52)
        for report in [a, b] {
            #expect(report.pp?.samples.count == 2 && report.tg?.samples.count == 2)
            #expect((report.pp?.tokens_per_second ?? 0) > 0 && (report.tg?.tokens_per_second ?? 0) > 0)
        }
        let table = try bench(["-p", "8", "-n", "4", "-d", "40"])
        #expect(table.stdout.contains("| pp8 @ d40 |") && table.stdout.contains("| tg4 @ d40 |"), "\(table.stdout)")
        let refused = try bench(["-d", "8", "--parallel", "1,2"])
        #expect(refused.status != 0 && refused.stderr.contains("-d is not measured with --parallel"))
    }

    /// Every run of a test starts from its depth, also on a model with sliding-window layers,
    /// whose cache cannot be cut back into the window (issue 62: `-p 8192 -n 32 -d 8192` failed
    /// on Gemma 3 with "its sliding-window layers hold positions from … on" at the second run).
    @Test func depthWorksPastTheSlidingWindow() throws {
        let model = Fixtures.checkpoint("gemma3-tiny").path
        // Window 8; with 64-token batches the window layers hold 391 positions of the 804.
        let result = try CLITests().hearth(
            ["bench", "--model", model, "-t", "2", "-r", "2", "-p", "400", "-n", "4", "-d", "400", "-b", "64", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(result.stdout.utf8))
        #expect(report.depth == 400 && report.pp?.samples.count == 2 && report.tg?.samples.count == 2)
    }

    /// `blas` names the GEMM behind f32 products (`BLAS.backend`). With OpenBLAS linked: a kernel
    /// set named by `OPENBLAS_CORETYPE` is the user's choice and runs, even the SSE3 one; without
    /// the variable, OpenBLAS's own pick runs where it has 256-bit FMAs or wider, and Hearth's
    /// GEMM stands in where it does not (OpenBLAS 0.3.21 picks SSE3 kernels on CPU models it does
    /// not know); at `HEARTH_CPU=portable` OpenBLAS runs whatever it picked; `HEARTH_BLAS=hearth`
    /// runs Hearth's GEMM whatever OpenBLAS would. Without the `SystemLibraries` trait it is always
    /// Hearth's GEMM.
    @Test func blasNamesTheGEMMBehindFloatProducts() throws {
        func blas(_ environment: [String: String?]) throws -> String {
            let binary = try #require(CLITests.binary)
            let model = Fixtures.checkpoint("phi3-mha").path
            var environment = environment
            if !environment.keys.contains("HEARTH_BLAS") { environment["HEARTH_BLAS"] = .some(nil) }  // not the caller's
            let result = try runProcess(
                binary, ["bench", "--model", model, "-t", "1", "-r", "1", "-p", "4", "-n", "0", "--json"], environment: environment)
            #expect(result.status == 0, "\(String(decoding: result.stderr, as: UTF8.self))")
            struct Report: Decodable { let blas: String }
            return try JSONDecoder().decode(Report.self, from: result.stdout).blas
        }
        #if SystemLibraries && os(Linux) && arch(x86_64)
        let wide: Set<String> = ["haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"]
        #expect(try blas(["OPENBLAS_CORETYPE": "Prescott", "HEARTH_CPU": nil]) == "openblas Prescott")
        let picked = try blas(["OPENBLAS_CORETYPE": nil, "HEARTH_CPU": nil])
        if picked.hasPrefix("openblas ") {
            #expect(wide.contains(picked.dropFirst("openblas ".count).lowercased()), "\(picked)")
        } else {
            #expect(picked.hasPrefix("hearth (openblas: ") && picked.hasSuffix(")"), "\(picked)")
            let core = picked.dropFirst("hearth (openblas: ".count).dropLast().lowercased()
            #expect(!wide.contains(core), "\(picked)")
        }
        #expect(try blas(["OPENBLAS_CORETYPE": nil, "HEARTH_CPU": "portable"]).hasPrefix("openblas "))
        // `HEARTH_BLAS=hearth`: the trait-off build's GEMM in this build, even where the user named a core type.
        #expect(try blas(["OPENBLAS_CORETYPE": "Haswell", "HEARTH_CPU": nil, "HEARTH_BLAS": "hearth"]) == "hearth (HEARTH_BLAS=hearth)")
        #expect(try blas(["OPENBLAS_CORETYPE": "Haswell", "HEARTH_CPU": nil, "HEARTH_BLAS": "system"]) == "openblas Haswell")
        #elseif SystemLibraries && os(Linux)
        #expect(try blas(["HEARTH_CPU": nil]).hasPrefix("openblas "), "no kernel level here outruns OpenBLAS")
        #elseif os(Linux)
        #expect(try blas(["HEARTH_CPU": nil]) == "hearth")
        #else
        #expect(try blas(["HEARTH_CPU": nil]) == "accelerate")
        #endif
    }

    struct SpeculativeReport: Decodable {
        struct Speculative: Decodable {
            struct Stat: Decodable { let tokens_per_second: Double; let samples: [Double] }
            let mode: String, prompts: Int, prompt_tokens: [Int], generated_tokens: Int
            let plain: Stat, speculative: Stat
            let ratio_aggregate: Double, drafted: Int, accepted: Int, identical_texts: Int
            struct Run: Decodable { let prompt: Int; let plain_tokens: Int; let speculative_tokens: Int; let identical: Bool }
            let runs: [Run]
        }
        let speculative: Speculative?
    }

    /// `--speculative lookup --prompt-file F.jsonl`: each prompt generated greedily with and
    /// without prompt lookup, alternating, every repetition; the same tokens both ways, drafts
    /// taken from prompts that repeat themselves; a bad prompt file or a missing one is refused.
    @Test func speculativeComparesLookupWithPlainDecodingOnThePromptFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-bench-spec-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let prompts = dir.appendingPathComponent("prompts.jsonl")
        let lines = [
            #"{"kind": "echo", "prompt": "one two three four five six one two three four five six one two three"}"#,
            #"{"prompt": "the cat sat on the mat and the cat sat on the mat and the cat sat"}"#,
        ]
        try lines.joined(separator: "\n").write(to: prompts, atomically: true, encoding: .utf8)
        let result = try bench(["--speculative", "lookup", "--prompt-file", prompts.path, "-n", "24", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try #require(try JSONDecoder().decode(SpeculativeReport.self, from: Data(result.stdout.utf8)).speculative)
        #expect(report.mode == "lookup" && report.prompts == 2 && report.generated_tokens == 24)
        #expect(report.runs.count == 4 && report.runs.map(\.prompt) == [0, 1, 0, 1])
        #expect(report.runs.allSatisfy { $0.plain_tokens == 23 && $0.speculative_tokens == 23 }, "end tokens are banned")
        // Exact, not at a margin: a generated row multiplies at 16 bits as it would alone, whether
        // it is a plain step's one row or one of a verification's rows (SpeculativeDecodingTests
        // holds tiny checkpoints to the same); on the default model the bench reports the count.
        #expect(report.identical_texts == 4, "greedy output is the same with and without drafts")
        #expect(report.plain.samples.count == 2 && report.speculative.samples.count == 2)
        #expect(report.plain.tokens_per_second > 0 && report.speculative.tokens_per_second > 0 && report.ratio_aggregate > 0)
        #expect(report.drafted > 0 && report.accepted <= report.drafted, "the prompts repeat themselves: lookup drafts")

        let table = try bench(["--speculative", "lookup", "--prompt-file", prompts.path, "-n", "8", "-r", "1"])
        #expect(table.stdout.contains("tg8 × 2 prompts, speculative lookup") && table.stdout.contains("lookup ÷ off:"), "\(table.stdout)")
        let missing = try bench(["--speculative", "lookup", "-n", "8"])
        #expect(missing.status != 0 && missing.stderr.contains("--speculative needs --prompt-file"), "\(missing.stderr)")
        let bad = dir.appendingPathComponent("bad.jsonl")
        try "{\"text\": \"no prompt field\"}\n".write(to: bad, atomically: true, encoding: .utf8)
        let refused = try bench(["--speculative", "lookup", "--prompt-file", bad.path, "-n", "8"])
        #expect(refused.status != 0 && refused.stderr.contains("line 1: expected a JSON object with a \"prompt\" string"), "\(refused.stderr)")
    }
}
