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
}
