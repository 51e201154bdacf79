import Foundation
import HearthTestSupport
import Testing

@testable import HearthTokenizers

/// Bad, hostile and unusual tokenizer.json files: typed errors naming the key, never a crash;
/// and a synthetic 200k-token vocabulary for load and encode speed.
@Suite struct TokenizerJSONInputTests {
    /// A minimal valid file around the given sections (JSON text).
    static func file(
        model: String = #"{"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}"#,
        preTokenizer: String = "null", normalizer: String = "null", decoder: String = "null",
        postProcessor: String = "null", addedTokens: String = "[]"
    ) -> [UInt8] {
        Array(
            """
            {"version": "1.0", "added_tokens": \(addedTokens), "normalizer": \(normalizer),
             "pre_tokenizer": \(preTokenizer), "post_processor": \(postProcessor), "decoder": \(decoder),
             "model": \(model)}
            """.utf8)
    }

    static func error(_ json: [UInt8]) -> TokenizerError? {
        do {
            let definition = try TokenizerDefinition(json: json, path: "test.json")
            _ = try BPETokenizer(definition: definition, config: TokenizerConfig(), path: "test.json")
            return nil
        } catch let error as TokenizerError {
            return error
        } catch {
            return nil
        }
    }

    @Test func minimalFileEncodes() throws {
        let definition = try TokenizerDefinition(json: Self.file())
        let tokenizer = try BPETokenizer(definition: definition, config: TokenizerConfig())
        #expect(try tokenizer.encode("abba", addSpecialTokens: true) == [2, 1, 0])
        #expect(tokenizer.decode([2, 1, 0]) == "abba")
    }

    @Test func unknownComponentsNameTypeAndKey() {
        let pre = Self.error(
            Self.file(preTokenizer: #"{"type": "Sequence", "pretokenizers": [{"type": "Digits"}, {"type": "UnicodeScripts"}]}"#))
        #expect(pre?.code == .unsupported)
        #expect(pre?.key == "pre_tokenizer.pretokenizers[1].type")
        #expect(pre?.message.contains("UnicodeScripts") == true)

        let model = Self.error(Self.file(model: #"{"type": "Unigram", "vocab": [["a", 0.0]]}"#))
        #expect(model?.code == .unsupported)
        #expect(model?.key == "model.type")

        let normalizer = Self.error(Self.file(normalizer: #"{"type": "Precompiled", "precompiled_charsmap": null}"#))
        #expect(normalizer?.code == .unsupported && normalizer?.key == "normalizer.type")

        let decoder = Self.error(Self.file(decoder: ###"{"type": "WordPiece", "prefix": "##"}"###))
        #expect(decoder?.code == .unsupported && decoder?.key == "decoder.type")

        let post = Self.error(Self.file(postProcessor: #"{"type": "Mystery"}"#))
        #expect(post?.code == .unsupported && post?.key == "post_processor.type")

        let behavior = Self.error(
            Self.file(preTokenizer: #"{"type": "Split", "pattern": {"String": " "}, "behavior": "Sideways", "invert": false}"#))
        #expect(behavior?.code == .unsupported && behavior?.key == "pre_tokenizer.behavior")

        let regex = Self.error(
            Self.file(preTokenizer: #"{"type": "Split", "pattern": {"Regex": "(?<name"}, "behavior": "Isolated", "invert": false}"#))
        #expect(regex?.code == .unsupported && regex?.key == "pre_tokenizer.pattern")

        let dropout = Self.error(
            Self.file(model: #"{"type": "BPE", "dropout": 0.1, "vocab": {"a": 0}, "merges": []}"#))
        #expect(dropout?.code == .unsupported && dropout?.key == "model.dropout")

        let streaming = Self.error(
            Self.file(decoder: #"{"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "Strip", "content": "x", "start": 2, "stop": 0}]}"#))
        #expect(streaming?.code == .unsupported && streaming?.key == "decoder.decoders[1]")
    }

    @Test func brokenVocabulariesAreTypedErrors() {
        let missingMergeToken = Self.error(
            Self.file(model: #"{"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": [["a", "c"]]}"#))
        #expect(missingMergeToken?.code == .invalidModel && missingMergeToken?.key == "model.merges[0]")

        let missingMerged = Self.error(Self.file(model: #"{"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}"#))
        #expect(missingMerged?.code == .invalidModel && missingMerged?.message.contains("'ab'") == true)

        let noSpace = Self.error(Self.file(model: #"{"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["ab"]}"#))
        #expect(noSpace?.code == .invalidModel)

        let negative = Self.error(Self.file(model: #"{"type": "BPE", "vocab": {"a": -1}, "merges": []}"#))
        #expect(negative?.code == .invalidConfig)

        let huge = Self.error(Self.file(model: #"{"type": "BPE", "vocab": {"a": 99999999999}, "merges": []}"#))
        #expect(huge?.code == .invalidConfig)

        let noVocab = Self.error(Self.file(model: #"{"type": "BPE", "merges": []}"#))
        #expect(noVocab?.code == .invalidConfig && noVocab?.key == "model.vocab")

        let unk = Self.error(Self.file(model: #"{"type": "BPE", "unk_token": "<unk>", "vocab": {"a": 0}, "merges": []}"#))
        #expect(unk?.code == .invalidModel && unk?.key == "model.unk_token")

        let wrongType = Self.error(Self.file(model: #"{"type": "BPE", "vocab": ["a"], "merges": []}"#))
        #expect(wrongType?.code == .invalidConfig && wrongType?.key == "model.vocab")
    }

    @Test func malformedJSONIsATypedError() {
        for text in ["", "{", "{\"a\": }", "[1, 2", "{\"a\": \"\\ud800\"}", "{\"a\": tru}", "{\"a\": 1} x", "\"\u{01}\""] {
            #expect(throws: TokenizerError.self, "\(text.debugDescription)") {
                try TokenizerDefinition(json: Array(text.utf8))
            }
        }
        // Deep nesting is refused, not a stack overflow.
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: TokenizerError.self) { try TokenizerDefinition(json: Array(deep.utf8)) }
    }

    /// Random byte changes in a real file: every outcome is a tokenizer or a typed error.
    @Test func mutatedFilesNeverCrash() throws {
        let url = Fixtures.directory.appendingPathComponent("tokenizers/misc-bpe/tokenizer.json")
        let original = try [UInt8](Data(contentsOf: url))
        var rng = SplitMix64(seed: 7)
        var loaded = 0
        for _ in 0..<300 {
            var bytes = original
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let at = Int(rng.next() % UInt64(bytes.count))
                bytes[at] = UInt8(truncatingIfNeeded: rng.next())
            }
            do {
                let definition = try TokenizerDefinition(json: bytes)
                let tokenizer = try BPETokenizer(definition: definition, config: TokenizerConfig())
                _ = try tokenizer.encode("Hello, world! 123 Привет", addSpecialTokens: true)
                loaded += 1
            } catch is TokenizerError {
                continue
            }
        }
        #expect(loaded > 0)
    }

    @Test func escapedStringsAndBothMergeForms() throws {
        // "\u0120" is Ġ; the pair and the string form give the same merges.
        let vocab = #"{"\u0120": 0, "a": 1, "\u0120a": 2, "\"": 3, "\\": 4, "\"\\": 5}"#
        let pairs = try TokenizerDefinition(
            json: Self.file(model: #"{"type": "BPE", "vocab": \#(vocab), "merges": [["Ġ", "a"], ["\"", "\\"]]}"#))
        let strings = try TokenizerDefinition(
            json: Self.file(model: #"{"type": "BPE", "vocab": \#(vocab), "merges": ["\u0120 a", "\" \\"]}"#))
        #expect(pairs.model.merges == strings.model.merges)
        #expect(pairs.model.mergeCount == 2)
        #expect(pairs.model.id(of: "\"\\") == 5)
    }

    /// A Phi-4-sized vocabulary (200k tokens, ~200k merges) loads and encodes quickly.
    @Test func largeVocabularyLoadsAndEncodes() throws {
        let (json, tokenCount) = Self.syntheticTokenizerJSON(tokens: 200_000)
        var started = Date()
        let definition = try TokenizerDefinition(json: json)
        let tokenizer = try BPETokenizer(definition: definition, config: TokenizerConfig())
        let loadSeconds = Date().timeIntervalSince(started)
        #expect(tokenizer.vocabularySize == tokenCount)
        #expect(definition.model.mergeCount == tokenCount - 256)

        let text = String(repeating: "The quick brown fox jumps over the lazy dog. Привет, 世界! 12345\n", count: 64)
        started = Date()
        let ids = try tokenizer.encode(text, addSpecialTokens: false)
        let encodeSeconds = Date().timeIntervalSince(started)
        #expect(tokenizer.decode(ids) == text)
        print(
            "synthetic tokenizer.json: \(json.count / 1_000_000) MB, \(tokenCount) tokens: load \(String(format: "%.2f", loadSeconds)) s, "
                + "encode \(text.utf8.count) bytes \(String(format: "%.1f", encodeSeconds * 1000)) ms (\(ids.count) ids)")
        // Generous bounds for a debug build on a loaded machine; the figures are printed above.
        #expect(loadSeconds < 30)
        #expect(encodeSeconds < 5)
    }

    /// Byte-level vocabulary of `tokens` entries: the 256 byte characters, then merges of random pairs.
    static func syntheticTokenizerJSON(tokens: Int) -> ([UInt8], Int) {
        var rng = SplitMix64(seed: 42)
        var vocabulary = ByteLevelAlphabet.scalarForByte.map { String(Character($0)) }
        var known = Set(vocabulary)
        var merges: [(String, String)] = []
        while vocabulary.count < tokens {
            let a = vocabulary[Int(rng.next() % UInt64(vocabulary.count))]
            let b = vocabulary[Int(rng.next() % UInt64(min(vocabulary.count, 5000)))]
            let merged = a + b
            if merged.unicodeScalars.count > 12 || known.contains(merged) { continue }
            known.insert(merged)
            vocabulary.append(merged)
            merges.append((a, b))
        }
        func quoted(_ s: String) -> String {
            var out = "\""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        var text = #"{"added_tokens": [], "normalizer": null, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}, "post_processor": null, "decoder": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"#
        text.reserveCapacity(12_000_000)
        for (id, token) in vocabulary.enumerated() {
            if id > 0 { text += "," }
            text += quoted(token) + ":" + String(id)
        }
        text += #"}, "merges": ["#
        for (k, (a, b)) in merges.enumerated() {
            if k > 0 { text += "," }
            text += "[" + quoted(a) + "," + quoted(b) + "]"
        }
        text += "]}}"
        return (Array(text.utf8), vocabulary.count)
    }
}

/// A small deterministic random number generator for tests.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
