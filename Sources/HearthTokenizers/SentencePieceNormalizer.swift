/// SentencePiece's normalizer, byte for byte as libsentencepiece's `Normalizer::Normalize`:
/// the longest rule of the precompiled character map (NFKC and friends) or user-defined piece
/// at each position, leading, trailing and repeated spaces removed
/// (`remove_extra_whitespaces`), `▁` for spaces (`escape_whitespaces`) and one in front of the
/// text (`add_dummy_prefix`; behind it with `treat_whitespace_as_suffix`).
struct SentencePieceNormalizer: Sendable {
    /// The precompiled map: a Darts-clone double array whose values are offsets of
    /// NUL-terminated replacements in `replacements`.
    private let units: [UInt32]
    private let replacements: [UInt8]
    /// User-defined pieces, copied through unnormalized.
    let userDefined: ByteTrie
    let removeExtraWhitespaces: Bool
    let escapeWhitespaces: Bool
    let treatWhitespaceAsSuffix: Bool

    /// libsentencepiece considers this many matches of the map at one position (the shortest ones).
    private static let maxMatches = 32

    init(file: SentencePieceModelFile, userDefined: ByteTrie, path: String?) throws {
        self.userDefined = userDefined
        removeExtraWhitespaces = file.removeExtraWhitespaces
        escapeWhitespaces = file.escapeWhitespaces
        treatWhitespaceAsSuffix = file.treatWhitespaceAsSuffix
        guard let map = file.charsMap, !map.isEmpty else {
            units = []
            replacements = []
            return
        }
        // Blob: little-endian u32 size of the double array, the array, then the replacements.
        let blob = file.bytes[map]
        guard blob.count > 4 else { throw Self.broken(path, "the normalization rules are truncated") }
        let start = blob.startIndex
        let trieSize = Int(blob[start]) | Int(blob[start + 1]) << 8 | Int(blob[start + 2]) << 16 | Int(blob[start + 3]) << 24
        guard trieSize < blob.count, trieSize <= blob.count - 4 else {
            throw Self.broken(path, "the normalization rules' trie (\(trieSize) bytes) exceeds the blob (\(blob.count))")
        }
        var units = [UInt32](repeating: 0, count: trieSize / 4)
        units.withUnsafeMutableBytes { out in
            blob.withUnsafeBytes { raw in out.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[4..<(4 + out.count)])) }
        }
        #if _endian(big)
        for i in units.indices { units[i] = UInt32(littleEndian: units[i]) }
        #endif
        self.units = units
        replacements = Array(blob[(start + 4 + trieSize)...])
        guard Self.isValid(units, maxValue: replacements.count) else {
            throw Self.broken(path, "precompiled_charsmap is invalid")
        }
    }

    /// Darts-clone's `validate` (what libsentencepiece 0.2.3 checks before it uses a map): every
    /// offset stays inside the array and every value inside the replacements.
    private static func isValid(_ units: [UInt32], maxValue: Int) -> Bool {
        guard let root = units.first else { return false }
        func label(_ u: UInt32) -> UInt32 { u & (1 << 31 | 0xFF) }
        let size = units.count
        guard label(root) == 0, (root >> 8) & 1 == 0, offset(root) != 0, Int(offset(root)) | 0xFF < size else { return false }
        for i in 1..<max(1, size) {
            let unit = units[i]
            if label(unit) <= 0xFF {
                let target = i ^ Int(offset(unit))
                guard target | 0xFF < size else { return false }
                if (unit >> 8) & 1 == 1 && label(units[target]) <= 0xFF { return false }
            } else if Int(unit & ((1 << 31) - 1)) >= maxValue {
                return false
            }
        }
        return true
    }

    private static func broken(_ path: String?, _ message: String) -> TokenizerError {
        TokenizerError(.invalidModel, "tokenizer.model: \(message)", path: path,
                       remedy: "Download the checkpoint's tokenizer.model again")
    }

    /// What one step of normalization produces: `count` bytes at `start` of the input
    /// (`fromInput`) or of the replacements, for `consumed` input bytes.
    private struct Step {
        var fromInput: Bool
        var start: Int
        var count: Int
        var consumed: Int
    }

    /// `Normalizer::NormalizePrefix`: a user-defined piece as it is, else the longest rule of
    /// the map, else one character unchanged.
    @inline(__always)
    private func step(_ text: UnsafeBufferPointer<UInt8>, _ position: Int) -> Step {
        if !userDefined.isEmpty {
            let length = userDefined.longestPrefix(of: text, from: position)
            if length > 0 { return Step(fromInput: true, start: position, count: length, consumed: length) }
        }
        if !units.isEmpty, let (length, value) = longestRule(text, position) {
            var end = value
            while end < replacements.count && replacements[end] != 0 { end += 1 }
            let start = min(value, replacements.count)
            return Step(fromInput: false, start: start, count: max(0, end - start), consumed: length)
        }
        let length = min(text.count - position, SentencePieceNormalizer.utf8Length(text[position]))
        return Step(fromInput: true, start: position, count: length, consumed: length)
    }

    /// Darts-clone's common prefix search over the map: the longest of the first matches.
    @inline(__always)
    private func longestRule(_ text: UnsafeBufferPointer<UInt8>, _ position: Int) -> (Int, Int)? {
        var node = Int(Self.offset(units[0]))
        var found: (Int, Int)?
        var matches = 0
        var i = position
        while i < text.count {
            let byte = text[i]
            node ^= Int(byte)
            guard node < units.count else { break }
            let unit = units[node]
            guard unit & (1 << 31 | 0xFF) == UInt32(byte) else { break }
            node ^= Int(Self.offset(unit))
            i += 1
            if (unit >> 8) & 1 == 1 {
                guard node < units.count else { break }
                if matches < Self.maxMatches { found = (i - position, Int(units[node] & ((1 << 31) - 1))) }
                matches += 1
            }
        }
        return found
    }

    @inline(__always)
    private static func offset(_ unit: UInt32) -> UInt32 {
        (unit >> 10) << ((unit & (1 << 9)) >> 6)
    }

    /// The length of the UTF-8 sequence a lead byte starts (libsentencepiece's `OneCharLen`).
    @inline(__always)
    static func utf8Length(_ lead: UInt8) -> Int {
        switch lead >> 4 {
        case 0xC, 0xD: return 2
        case 0xE: return 3
        case 0xF: return 4
        default: return 1
        }
    }

    /// Normalizes `text` (valid UTF-8) into `out` (cleared first); `addDummyPrefix` is the
    /// NormalizerSpec's flag (or what the caller puts in its place).
    func normalize(_ text: UnsafeBufferPointer<UInt8>, addDummyPrefix: Bool, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        out.reserveCapacity(text.count * 3)
        var position = 0
        if removeExtraWhitespaces {
            while position < text.count {
                let s = step(text, position)
                guard isSingleSpace(s, text) else { break }
                position += s.consumed
            }
        }
        if position == text.count { return }
        if !treatWhitespaceAsSuffix && addDummyPrefix { appendSpace(&out) }
        var previousIsSpace = removeExtraWhitespaces
        replacements.withUnsafeBufferPointer { table in
            while position < text.count {
                let s = step(text, position)
                let source = s.fromInput ? text : table
                var start = s.start
                let end = s.start + s.count
                if previousIsSpace {
                    while start < end && source[start] == 0x20 { start += 1 }
                }
                if start < end {
                    for k in start..<end {
                        if escapeWhitespaces && source[k] == 0x20 {
                            out.append(0xE2)
                            out.append(0x96)
                            out.append(0x81)
                        } else {
                            out.append(source[k])
                        }
                    }
                    previousIsSpace = source[end - 1] == 0x20
                }
                position += s.consumed
                if !removeExtraWhitespaces { previousIsSpace = false }
            }
        }
        if removeExtraWhitespaces {
            if escapeWhitespaces {
                while out.count >= 3 && out[out.count - 3] == 0xE2 && out[out.count - 2] == 0x96 && out[out.count - 1] == 0x81 {
                    out.removeLast(3)
                }
            } else {
                while out.last == 0x20 { out.removeLast() }
            }
        }
        if treatWhitespaceAsSuffix && addDummyPrefix { appendSpace(&out) }
    }

    private func isSingleSpace(_ s: Step, _ text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard s.count == 1 else { return false }
        return (s.fromInput ? text[s.start] : replacements[s.start]) == 0x20
    }

    @inline(__always)
    private func appendSpace(_ out: inout [UInt8]) {
        if escapeWhitespaces {
            out.append(0xE2)
            out.append(0x96)
            out.append(0x81)
        } else {
            out.append(0x20)
        }
    }
}
