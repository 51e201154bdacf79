import Foundation
import HearthTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

enum CLITestError: Error { case binaryNotFound }

/// Drives the real `hearth` binary the way users and scripts do.
@Suite struct CLITests {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    /// The built `hearth` next to the test bundle.
    static var binary: URL? {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("hearth")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir.deleteLastPathComponent()
        }
        return nil
    }

    func hearth(_ arguments: [String], stdin: Data? = nil) throws -> Result {
        guard let binary = Self.binary else { throw CLITestError.binaryNotFound }
        let result = try runProcess(binary, arguments, stdin: stdin)
        return Result(
            status: result.status, stdout: String(decoding: result.stdout, as: UTF8.self),
            stderr: String(decoding: result.stderr, as: UTF8.self))
    }

    @Test(arguments: Fixtures.phi3Checkpoints)
    func greedyJSONReproducesTransformers(_ name: String) throws {
        let prompt = try Fixtures.reference(name).prompts[0]
        let result = try hearth([
            "generate", "--model", Fixtures.checkpoint(name).path, "--prompt", prompt.text, "--raw",
            "--temperature", "0", "--json", "--max-tokens", "16", "--top-logprobs", "3", "--threads", "2", "--kv-type", "f32",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").map { Data($0.utf8) }
        let objects = try lines.map { try #require(JSONSerialization.jsonObject(with: $0) as? [String: Any]) }
        let tokens = objects.filter { $0["done"] == nil }
        let ids = tokens.compactMap { ($0["id"] as? NSNumber)?.int32Value }
        let clear = try Fixtures.clearGreedySteps(name, prompt: prompt.name)
        #expect(ids.prefix(clear) == prompt.greedy.prefix(clear))
        for token in tokens {
            let top = try #require(token["top_logprobs"] as? [[String: Any]])
            #expect(top.count == 3)
            // Greedy picks the most likely token.
            #expect((top.first?["id"] as? NSNumber)?.int32Value == (token["id"] as? NSNumber)?.int32Value)
            #expect(((token["logprob"] as? NSNumber)?.doubleValue ?? 1) <= 0)
        }
        let done = try #require(objects.last)
        #expect(done["done"] as? Bool == true)
        if clear == prompt.greedy.count {
            #expect(done["finish_reason"] as? String == (prompt.greedy_stopped_on_eos ? "stop" : "length"))
            #expect((done["completion_tokens"] as? NSNumber)?.intValue == prompt.greedy.count)
        }
        #expect((done["prompt_tokens"] as? NSNumber)?.intValue == prompt.input_ids.count)
        #expect(done["prefill_tokens_per_second"] is NSNumber)
        #expect(done["decode_tokens_per_second"] is NSNumber)
    }

    @Test func chatTemplateIsAppliedWithoutRaw() throws {
        let chat = try Fixtures.reference("phi3-mha").chat[0]
        let result = try hearth([
            "generate", "--model", Fixtures.checkpoint("phi3-mha").path, "--prompt", chat.messages[0].content,
            "--temperature", "0", "--json", "--max-tokens", "2",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("\"prompt_tokens\":\(chat.input_ids.count)"))
    }

    @Test func tokenizePrintsIds() throws {
        let prompt = try Fixtures.reference("phi3-mha").prompts[1]
        let path = Fixtures.checkpoint("phi3-mha").path
        let withBOS = try hearth(["tokenize", "--model", path, "--text", prompt.text])
        #expect(withBOS.status == 0)
        #expect(withBOS.stdout == "[" + prompt.input_ids.map(String.init).joined(separator: ",") + "]\n")
        let noBOS = try hearth(["tokenize", "--model", path, "--text", prompt.text, "--no-bos"])
        #expect(noBOS.stdout == "[" + prompt.input_ids.dropFirst().map(String.init).joined(separator: ",") + "]\n")
    }

    @Test func inspectDescribesTheModel() throws {
        let result = try hearth(["inspect", "--model", Fixtures.checkpoint("phi3-gqa-longrope").path])
        #expect(result.status == 0, "\(result.stderr)")
        for needle in ["Phi3ForCausalLM", "kv heads 2", "f16", "longrope", "1000", "1007", "phi3", "context length"] {
            #expect(result.stdout.contains(needle), "missing \(needle)")
        }
    }

    @Test func inspectShowsTheTokenizerKind() throws {
        let phi4 = try hearth(["inspect", "--model", Fixtures.checkpoint("phi4-mini-tiny").path])
        #expect(phi4.status == 0, "\(phi4.stderr)")
        for needle in ["tokenizer:       bpe-byte-level", "o200k split", "chat template:   phi4-mini", "1802"] {
            #expect(phi4.stdout.contains(needle), "missing \(needle)")
        }
        let phi2 = try hearth(["inspect", "--model", Fixtures.checkpoint("phi2-tiny").path])
        #expect(phi2.stdout.contains("tokenizer:       bpe-byte-level, gpt2 split"))
        #expect(phi2.stdout.contains("chat template:   instruct"))
        let phi3 = Fixtures.checkpoint("phi3-mha").path
        #expect(try hearth(["inspect", "--model", phi3]).stdout.contains("tokenizer:       sentencepiece"))
        let forced = try hearth(["inspect", "--model", phi3, "--tokenizer", "json"])
        #expect(forced.stdout.contains("tokenizer:       bpe, byte fallback"), "\(forced.stdout)\(forced.stderr)")
    }

    /// `hearth quantize` on a tokenizer.json-only checkpoint keeps the tokenizer inside the HQF file.
    @Test func quantizedFileKeepsTokenizerJSON() throws {
        let checkpoint = Fixtures.checkpoint("phi4-mini-tiny").path
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-test-\(UUID().uuidString).hqf")
        defer { try? FileManager.default.removeItem(at: output) }
        let quantized = try hearth(["quantize", "--model", checkpoint, "--output", output.path, "--type", "q8_0", "-t", "2"])
        #expect(quantized.status == 0, "\(quantized.stderr)")
        let text = try Fixtures.reference("phi4-mini-tiny").prompts[3].text
        let fromCheckpoint = try hearth(["tokenize", "--model", checkpoint, "--text", text])
        let fromHQF = try hearth(["tokenize", "--model", output.path, "--text", text])
        #expect(fromHQF.status == 0, "\(fromHQF.stderr)")
        #expect(fromHQF.stdout == fromCheckpoint.stdout)
        let inspect = try hearth(["inspect", "--model", output.path])
        #expect(inspect.stdout.contains("bpe-byte-level") && inspect.stdout.contains("phi4-mini"))
    }

    @Test func badInputExitsNonZeroWithAMessage() throws {
        let missing = try hearth(["generate", "--model", "/nonexistent", "--prompt", "hi"])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("does not exist"))
        let prompt = String(repeating: "word ", count: 200)
        let tooLong = try hearth([
            "generate", "--model", Fixtures.checkpoint("phi3-mha").path, "--prompt", prompt, "--raw", "--ctx", "32",
        ])
        #expect(tooLong.status != 0)
        #expect(tooLong.stderr.contains("context"))
        let badFlag = try hearth(["generate", "--model", Fixtures.checkpoint("phi3-mha").path, "--prompt", "x", "--top-p", "0"])
        #expect(badFlag.status != 0)
    }

    /// `--draft-model`: a model of the same tokenizer drafts (here the model itself, greedy: the
    /// same tokens as `--speculative off`, drafts reported on the done line); another tokenizer
    /// is refused by name; `--speculative draft` without a draft model is a usage error.
    @Test func draftModelFlags() throws {
        let phi3 = Fixtures.checkpoint("phi3-mha").path
        let common = ["generate", "--model", phi3, "--prompt", "one two three", "--raw", "--temperature", "0", "--max-tokens", "24", "--json", "-t", "2"]
        let plain = try hearth(common + ["--speculative", "off"])
        let drafted = try hearth(common + ["--draft-model", Fixtures.checkpoint("phi3-partial-tied").path])
        #expect(plain.status == 0 && drafted.status == 0, "\(plain.stderr) \(drafted.stderr)")
        func ids(_ r: Result) -> [Int] {
            r.stdout.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["id"] as? Int
            }
        }
        #expect(ids(plain).count == 24 && ids(drafted) == ids(plain))
        #expect(drafted.stdout.contains("\"drafted_tokens\""))
        let mismatch = try hearth(common + ["--draft-model", Fixtures.checkpoint("phi2-tiny").path])
        #expect(mismatch.status != 0 && mismatch.stderr.contains("tokenizer differs"), "\(mismatch.stderr)")
        let missing = try hearth(common + ["--speculative", "draft"])
        #expect(missing.status != 0 && missing.stderr.contains("--speculative draft needs --draft-model"), "\(missing.stderr)")
    }

    /// A file that is no model format says so, with its first bytes, and what to pass instead.
    @Test func unknownFileSaysWhatItIsNot() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-test-\(UUID().uuidString).gguf")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data([0xde, 0xad, 0xbe, 0xef, 0x41, 0x42, 0x43, 0x00, 0x01]).write(to: file)
        let result = try hearth(["inspect", "--model", file.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("neither a GGUF, an HQF nor a safetensors file"), "\(result.stderr)")
        #expect(result.stderr.contains("de ad be ef 41 42 43"), "\(result.stderr)")
        #expect(!result.stderr.contains("config.json in the model directory"))
    }

    /// `inspect` names things as people read them, and `--json` gives the same for scripts.
    @Test func inspectPrintsNamesAndJSON() throws {
        let path = Fixtures.checkpoint("gemma3-tiny").path
        let text = try hearth(["inspect", "--model", path])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("mlp:             gated, gelu_tanh"), "\(text.stdout)")
        #expect(!text.stdout.contains("HearthEngine."))
        let json = try hearth(["inspect", "--model", path, "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let object = try #require(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["activation"] as? String == "gelu_tanh")
        #expect(object["norm"] as? String == "rmsnorm")
        let stops = try #require(object["stop_tokens"] as? [[String: Any]])
        #expect(!stops.isEmpty && stops.allSatisfy { !($0["text"] as? String ?? "").isEmpty }, "\(stops)")
    }

    /// `inspect`'s KV figures count the cache the engine allocates: for Gemma 4 only the layers
    /// that own their keys and values (the last `num_kv_shared_layers` read another's), each at
    /// the widest head (`global_head_dim` of the full-attention layers), and no quantized types
    /// (the engine refuses them for mixed head sizes). Computed here from the fixture's config.json.
    @Test func inspectCountsGemma4sRealKVCache() throws {
        let dir = Fixtures.checkpoint("gemma4-tiny")
        let config = try #require(
            JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("config.json"))) as? [String: Any])
        let layers = try #require(config["num_hidden_layers"] as? Int), shared = try #require(config["num_kv_shared_layers"] as? Int)
        let kvHeads = try #require(config["num_key_value_heads"] as? Int)
        let head = max(try #require(config["head_dim"] as? Int), try #require(config["global_head_dim"] as? Int))
        let window = try #require(config["sliding_window"] as? Int)
        let f16PerToken = 2 * (layers - shared) * kvHeads * head * 2  // keys and values, 2 bytes each
        #expect(f16PerToken == 6144)
        let context = 64
        #expect(context <= window - 1 + 128 + 256, "a window layer's buffer would be shorter than the context")
        let json = try hearth(["inspect", "--model", dir.path, "--json", "--ctx", String(context)])
        #expect(json.status == 0, "\(json.stderr)")
        let object = try #require(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let perToken = try #require(object["kv_bytes_per_token"] as? [String: Int])
        #expect(perToken == ["f16": f16PerToken, "f32": 2 * f16PerToken], "\(perToken)")
        #expect(object["kv_cache_bytes_f16"] as? Int == f16PerToken * context)
        #expect(object["kv_cache_bytes"] as? Int == f16PerToken * context)
        let text = try hearth(["inspect", "--model", dir.path, "--ctx", String(context)])
        #expect(text.stdout.contains("KV per token:    f16 6.0 KiB, f32 12.0 KiB\n"), "\(text.stdout)")
        let q8 = try hearth(["inspect", "--model", dir.path, "--ctx", String(context), "--kv-type", "q8_0"])
        #expect(q8.stdout.contains("q8_0 is not supported for layers of different head sizes"), "\(q8.stdout)")
    }

    @Test func everyFlagHasHelp() throws {
        // swift-argument-parser's machine-readable help lists every argument with its abstract.
        let result = try hearth(["--experimental-dump-help"])
        #expect(result.status == 0)
        let root = try #require(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        var count = 0
        func walk(_ command: [String: Any]) {
            // swift-argument-parser's own `help` subcommand is not ours to document.
            if command["commandName"] as? String == "help" { return }
            for argument in command["arguments"] as? [[String: Any]] ?? [] {
                count += 1
                let abstract = argument["abstract"] as? String ?? ""
                #expect(!abstract.isEmpty, "\(command["commandName"] ?? "?") \(argument["names"] ?? "?") has no help")
            }
            for sub in command["subcommands"] as? [[String: Any]] ?? [] { walk(sub) }
        }
        walk(try #require(root["command"] as? [String: Any]))
        #expect(count > 20)
    }
}

/// `hearth serve` started as a user starts it: the real binary, listening once it prints its URL.
struct ServeProcess {
    let process: Process
    /// `http://127.0.0.1:PORT` (no `/v1`).
    let base: String
    let stderr: Pipe

    /// Starts `hearth serve ARGUMENTS` (with `environment` instead of this process's when given)
    /// and waits up to a minute for its URL line.
    static func start(_ arguments: [String], environment: [String: String]? = nil) throws -> ServeProcess {
        let binary = try #require(CLITests.binary)
        let process = Process()
        process.executableURL = binary
        process.arguments = ["serve"] + arguments
        if let environment { process.environment = environment }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        var printed = ""
        let deadline = Date().addingTimeInterval(60)
        while !printed.contains("\n"), Date() < deadline, process.isRunning {
            printed += String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
        }
        guard let url = printed.split(separator: " ").first(where: { $0.hasPrefix("http://127.0.0.1:") }) else {
            if process.isRunning { process.terminate() }
            throw ServeStartError(printed: printed)
        }
        return ServeProcess(process: process, base: String(url.dropLast(3)), stderr: err)
    }

    /// SIGTERM, then waits for the exit; returns what the server logged.
    @discardableResult
    func stop() -> String {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
        return String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }
}

/// One HTTP request to a server under test: GET, or POST of a JSON `body`; `bearer` as the
/// `Authorization` key. Returns the status (0 without an HTTP response) and the body text.
func httpCall(_ base: String, _ path: String, body: String? = nil, bearer: String? = nil) async throws -> (status: Int, body: String) {
    var request = URLRequest(url: try #require(URL(string: base + path)))
    if let body {
        request.httpMethod = "POST"
        request.httpBody = Data(body.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    }
    if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
}

/// `hearth serve` exited or printed no URL within a minute.
struct ServeStartError: Error, CustomStringConvertible {
    let printed: String
    var description: String { "hearth serve printed no URL: \(printed)" }
}
