import Foundation
import HearthProviders
import Testing

@testable import HearthServer

/// The audit table of docs/SERVER.md ("Request fields") lists exactly the fields each endpoint
/// accepts in code (`AcceptedFields`), marks each honoured, accepted (a hint) or refused, and
/// cites tests that exist; every field the official SDKs define for an endpoint
/// (Tests/Fixtures/api-fields.json, from scripts/make_api_fields.py) is in its table, the tables
/// name the SDK versions they were checked against, and the answers' usage objects carry every
/// usage field of those SDKs.
@Suite struct AcceptedFieldsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Row {
        var field: String
        var disposition: String
        var evidence: String
    }

    /// The section's tables, by the endpoint named in each `#### `path`` heading.
    static func tables() throws -> [String: [Row]] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/SERVER.md"), encoding: .utf8)
        guard let start = text.range(of: "\n## Request fields\n") else { return [:] }
        let section = text[start.upperBound...]
        var tables: [String: [Row]] = [:]
        var current: String?
        for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") { break }
            if line.hasPrefix("#### ") {
                current = line.dropFirst(5).trimmingCharacters(in: CharacterSet(charactersIn: "` "))
                tables[current ?? ""] = []
                continue
            }
            guard let endpoint = current, line.hasPrefix("| `") else { continue }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            tables[endpoint, default: []].append(
                Row(field: cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`")), disposition: cells[2], evidence: cells[3]))
        }
        return tables
    }

    @Test func theAuditTableListsExactlyTheAcceptedFields() throws {
        let tables = try Self.tables()
        #expect(Set(tables.keys) == Set(AcceptedFields.byEndpoint.map(\.path)), "\(tables.keys.sorted())")
        for (path, fields) in AcceptedFields.byEndpoint {
            let rows = tables[path] ?? []
            #expect(Set(rows.map(\.field)) == fields, "\(path): table \(rows.map(\.field).sorted()) vs code \(fields.sorted())")
            #expect(rows.count == Set(rows.map(\.field)).count, "\(path): a field listed twice")
            for row in rows {
                #expect(
                    ["honoured", "accepted", "refused"].contains { row.disposition.hasPrefix($0) }, "\(path) \(row.field): \(row.disposition)")
            }
        }
    }

    /// Every cited test exists: `Suite.function` in the server tests, or a check's name in a
    /// script CI runs.
    @Test func everyCitedTestExists() throws {
        let testsDirectory = Self.root.appendingPathComponent("Tests/HearthServerTests")
        let sources = try FileManager.default.contentsOfDirectory(atPath: testsDirectory.path).filter { $0.hasSuffix(".swift") }
            .map { try String(contentsOf: testsDirectory.appendingPathComponent($0), encoding: .utf8) }.joined(separator: "\n")
        for (path, rows) in try Self.tables() {
            for row in rows {
                let cited = row.evidence.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
                #expect(!cited.isEmpty, "\(path) \(row.field): no test cited")
                if let script = cited.first(where: { $0.hasSuffix(".py") }) {
                    let code = try String(contentsOf: Self.root.appendingPathComponent("scripts/\(script)"), encoding: .utf8)
                    for check in cited where check != script {
                        #expect(code.contains("\"\(check)\""), "\(path) \(row.field): no check '\(check)' in \(script)")
                    }
                    continue
                }
                for name in cited {
                    let parts = name.split(separator: ".")
                    #expect(parts.count == 2, "\(path) \(row.field): '\(name)' is not Suite.function")
                    guard parts.count == 2 else { continue }
                    #expect(sources.contains("struct \(parts[0])"), "\(path) \(row.field): no suite \(parts[0])")
                    #expect(sources.contains("func \(parts[1])("), "\(path) \(row.field): no test \(name)")
                }
            }
        }
    }

    // MARK: The official APIs' fields

    /// Tests/Fixtures/api-fields.json as JSON.
    static func fixture() throws -> [String: Any] {
        let data = try Data(contentsOf: root.appendingPathComponent("Tests/Fixtures/api-fields.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// The body fields the SDKs define for each endpoint (header parameters left out).
    static func specFields() throws -> [String: Set<String>] {
        let endpoints = try #require(try fixture()["endpoints"] as? [String: [String: Any]])
        return endpoints.mapValues { Set($0["fields"] as? [String] ?? []) }
    }

    /// A field the spec defines and the server does not list fails here: the server would answer
    /// a client built for the real API with `unknown_parameter`. (Before issue 56 this failed
    /// for 62 fields, `metadata` and `thinking` on /v1/messages and `prompt_cache_key` on
    /// /v1/responses among them.)
    @Test func everyFieldTheSDKsDefineIsInTheTables() throws {
        let spec = try Self.specFields()
        let accepted = Dictionary(uniqueKeysWithValues: AcceptedFields.byEndpoint.map { ($0.path, $0.fields) })
        #expect(spec.count == 7, "\(spec.keys.sorted())")
        for (path, fields) in spec {
            let table = try #require(accepted[path], "\(path) has no field list")
            let missing = fields.subtracting(table)
            #expect(missing.isEmpty, "\(path): the official API defines \(missing.sorted()), which the server does not list")
        }
    }

    /// A listed field no official API defines for its endpoint is an extra (llama-server's,
    /// vLLM's, or an earlier API version's) and its row says so.
    @Test func fieldsNoSDKDefinesAreMarkedAsExtras() throws {
        let spec = try Self.specFields()
        for (path, rows) in try Self.tables() {
            guard let defined = spec[path] else { continue }  // /tokenize, /detokenize: llama.cpp's own
            for row in rows where !defined.contains(row.field) {
                #expect(row.disposition.contains("extra"), "\(path) \(row.field) is no field of the official API: its row must say 'extra'")
            }
        }
    }

    /// The section names the SDK versions the tables were checked against, and they are the
    /// fixture's.
    @Test func theTablesNameTheSDKVersionsTheyWereCheckedAgainst() throws {
        let sdks = try #require(try Self.fixture()["sdks"] as? [String: String])
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/SERVER.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "\n## Request fields\n").dropFirst().first)
        for (sdk, name) in [("openai", "openai-python"), ("anthropic", "anthropic-sdk-python")] {
            let version = try #require(sdks[sdk])
            #expect(section.contains("\(name) \(version)"), "docs/SERVER.md 'Request fields' does not name \(name) \(version)")
        }
    }

    /// The keys of a JSON object, nested objects as their own keys (a leaf is nil).
    static func shape(_ value: JSONValue) -> [String: Any] {
        guard case .object(let pairs) = value else { return [:] }
        var out: [String: Any] = [:]
        for (key, item) in pairs {
            if case .object = item { out[key] = shape(item) } else { out[key] = NSNull() }
        }
        return out
    }

    /// The fields of `expected` (the SDK's model) missing from `actual`, as dotted paths.
    static func missing(_ expected: [String: Any], in actual: [String: Any], at prefix: String = "") -> [String] {
        expected.keys.sorted().flatMap { key -> [String] in
            guard let have = actual[key] else { return [prefix + key] }
            guard let nested = expected[key] as? [String: Any] else { return [] }
            return missing(nested, in: have as? [String: Any] ?? [:], at: prefix + key + ".")
        }
    }

    /// Each answer's usage carries every field of the SDK's usage model (nested ones included):
    /// before issue 56 Anthropic's lacked `inference_geo`, `output_tokens_details` and `speed`,
    /// chat's `audio_tokens` and the prediction counts, the Responses API's cache writes.
    @Test func usageCarriesEveryFieldOfTheSDKsUsageModels() throws {
        let usage = try #require(try Self.fixture()["usage"] as? [String: [String: Any]])
        func renderer(_ endpoint: Endpoint) -> ResponseRenderer {
            let job = GenerationJob(
                endpoint: endpoint, input: .chat([]), options: ChatOptions(), stream: false, includeUsage: true, logprobs: nil, model: "m")
            return ResponseRenderer(job: job, requestID: "r")
        }
        let counts = Usage(promptTokens: 7, completionTokens: 3, cachedPromptTokens: 2)
        let rendered: [String: JSONValue] = [
            "openai chat.completion usage": renderer(.chatCompletions).openAIUsage(counts),
            "openai text_completion usage": renderer(.completions).openAIUsage(counts),
            "openai response usage": renderer(.responses).responsesUsage(counts),
            "anthropic message usage": renderer(.messages).anthropicUsage(input: 7, output: 3, cached: 2),
            "anthropic message_delta usage": renderer(.messages).anthropicDeltaUsage(input: 7, output: 3, cached: 2),
        ]
        #expect(Set(rendered.keys) == Set(usage.keys), "\(usage.keys.sorted())")
        for (name, entry) in usage {
            let expected = entry["fields"] as? [String: Any] ?? [:]
            let gaps = Self.missing(expected, in: Self.shape(rendered[name] ?? .null))
            #expect(gaps.isEmpty, "\(name) lacks \(gaps)")
        }
        // The cached count is the provider's (the prompt cache reports it there).
        let chat = Self.shape(renderer(.chatCompletions).openAIUsage(counts))
        #expect(chat["prompt_tokens_details"] != nil)
        if case .object(let pairs) = renderer(.chatCompletions).openAIUsage(counts),
            case .object(let details)? = pairs.first(where: { $0.0 == "prompt_tokens_details" })?.1
        {
            #expect(details.first { $0.0 == "cached_tokens" }?.1 == .int(2))
        } else {
            Issue.record("no prompt_tokens_details")
        }
    }
}
