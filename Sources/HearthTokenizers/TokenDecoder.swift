/// A compiled `decoder`, applied token by token so `StreamingDetokenizer` can emit text as it
/// arrives. tokenizers runs its decoders over the whole list of tokens; every step Hearth
/// accepts gives the same bytes when run per token, except the ones acting on the joined text
/// (after `Fuse` or `ByteLevel`), of which only "drop one leading space" (`Strip` of one " " at
/// the start, or `Metaspace`'s first-token rule) is allowed — it becomes `stripsLeadingSpace`.
struct TokenDecoder: Sendable {
    private enum Step: Sendable {
        case byteLevel
        case replace([UInt8], with: [UInt8])
        case byteFallback
        case strip(content: [UInt8], start: Int, stop: Int)
    }

    private let steps: [Step]
    /// The first token of a decoded text loses one leading space.
    let stripsLeadingSpace: Bool

    init(_ definition: DecoderDefinition?, path: String?) throws {
        var steps: [Step] = []
        var fused = false
        var stripsLeadingSpace = false
        func fail(_ what: String, _ key: String) -> TokenizerError {
            TokenizerError(
                .unsupported, "decoder step \(what) acts on the joined text, which Hearth cannot stream", path: path,
                key: key)
        }
        func add(_ d: DecoderDefinition, key: String) throws {
            switch d {
            case .byteLevel:
                steps.append(.byteLevel)
                fused = true
            case .fuse:
                fused = true
            case .byteFallback:
                // After joining, no single token looks like <0xNN> any more.
                if !fused { steps.append(.byteFallback) }
            case .replace(.string(let pattern), let content):
                // A one-character pattern cannot straddle two tokens, so it may run per token after joining too.
                if fused && pattern.unicodeScalars.count > 1 { throw fail("Replace of '\(pattern)'", key) }
                if !pattern.isEmpty { steps.append(.replace(Array(pattern.utf8), with: Array(content.utf8))) }
            case .replace(.regex(let source), _):
                throw TokenizerError(
                    .unsupported, "decoder Replace with a regex (\(source.debugDescription)) is not supported",
                    path: path, key: key)
            case .metaspace(let replacement, let scheme):
                steps.append(.replace(Array(String(replacement).utf8), with: [0x20]))
                if scheme != .never { stripsLeadingSpace = true }
            case .strip(let content, let start, let stop):
                if !fused {
                    steps.append(.strip(content: Array(String(content).utf8), start: start, stop: stop))
                } else if content == " " && start <= 1 && stop == 0 {
                    if start == 1 { stripsLeadingSpace = true }
                } else {
                    throw fail("Strip(\(String(content).debugDescription), start \(start), stop \(stop))", key)
                }
            case .sequence(let list):
                for (i, item) in list.enumerated() { try add(item, key: "\(key).decoders[\(i)]") }
            }
        }
        if let definition { try add(definition, key: "decoder") }
        self.steps = steps
        self.stripsLeadingSpace = stripsLeadingSpace
    }

    /// A decoder for a GGUF `gpt2` vocabulary: byte-level tokens, added tokens as written.
    static let byteLevel = TokenDecoder(steps: [.byteLevel])

    private init(steps: [Step]) {
        self.steps = steps
        stripsLeadingSpace = false
    }

    /// The bytes one token stands for.
    func decode(_ token: ArraySlice<UInt8>) -> [UInt8] {
        var bytes = Array(token)
        for step in steps {
            switch step {
            case .byteLevel:
                // Tokens with characters outside the alphabet (added tokens) keep their own UTF-8.
                if let decoded = ByteLevelAlphabet.decode(bytes) { bytes = decoded }
            case .replace(let pattern, let content):
                bytes = Self.replace(bytes, pattern, content)
            case .byteFallback:
                if bytes.count == 6, bytes.starts(with: Array("<0x".utf8)), bytes[5] == UInt8(ascii: ">"),
                    let byte = UInt8(String(decoding: bytes[3..<5], as: UTF8.self), radix: 16)
                {
                    bytes = [byte]
                }
            case .strip(let content, let start, let stop):
                var lo = 0, hi = bytes.count
                for _ in 0..<start where bytes[lo..<hi].starts(with: content) { lo += content.count }
                for _ in 0..<stop where hi - lo >= content.count && bytes[(hi - content.count)..<hi].elementsEqual(content) {
                    hi -= content.count
                }
                bytes = Array(bytes[lo..<hi])
            }
        }
        return bytes
    }

    private static func replace(_ bytes: [UInt8], _ pattern: [UInt8], _ content: [UInt8]) -> [UInt8] {
        guard !pattern.isEmpty, bytes.count >= pattern.count else { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if i + pattern.count <= bytes.count && bytes[i..<(i + pattern.count)].elementsEqual(pattern) {
                out.append(contentsOf: content)
                i += pattern.count
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }
}
