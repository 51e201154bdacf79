/// The `model` section of a BPE tokenizer.json (or a GGUF `gpt2` vocabulary): the vocabulary,
/// the merges resolved to ids, and the options that change how words are split.
package struct BPEModelDefinition: Sendable {
    /// Token bytes ⇄ ids.
    let vocabulary: TokenTable
    /// `left << 32 | right` → `rank << 32 | merged`, the rank being the merge's line number.
    let merges: [UInt64: UInt64]
    /// The token for characters missing from the vocabulary (none: they are dropped, as in tokenizers).
    package var unknownToken: String?
    /// Merge runs of unknown characters into one unknown token.
    package var fuseUnknown: Bool
    /// Characters missing from the vocabulary become their `<0xNN>` byte tokens.
    package var byteFallback: Bool
    /// A word that is itself in the vocabulary is one token, whatever the merges say.
    package var ignoreMerges: Bool
    /// A word of newlines only that is itself in the vocabulary is one token (llama.cpp's
    /// `gemma4` vocabularies).
    package var wholeNewlineRuns = false
    /// Prefix of every symbol but the first in a word (WordPiece-style BPE, `##`).
    package var continuingSubwordPrefix: String?
    /// Suffix of the last symbol of a word (`</w>`).
    package var endOfWordSuffix: String?

    /// Number of merges.
    package var mergeCount: Int { merges.count }
    /// One past the largest vocabulary id.
    package var vocabularyBound: Int { vocabulary.idBound }

    init(json: JSONValue) throws {
        if let type = json.optional("type") {
            let name = try type.string()
            guard name == "BPE" else { throw unsupported(json, kind: "model", type: name) }
        }
        let path = json.document.path
        if let dropout = json.optional("dropout"), try dropout.double() > 0 {
            throw TokenizerError(
                .unsupported, "BPE dropout makes encoding random; Hearth encodes deterministically", path: path,
                key: dropout.keyPath, remedy: "Set \"dropout\" to null")
        }
        unknownToken = try json.optional("unk_token")?.string()
        fuseUnknown = try json.optional("fuse_unk")?.bool() ?? false
        byteFallback = try json.optional("byte_fallback")?.bool() ?? false
        ignoreMerges = try json.optional("ignore_merges")?.bool() ?? false
        continuingSubwordPrefix = try json.optional("continuing_subword_prefix")?.string()
        endOfWordSuffix = try json.optional("end_of_word_suffix")?.string()

        let document = json.document
        let vocab = try json.required("vocab")
        var table = TokenTable(expectedCount: Int(vocab.node.count))
        try vocab.forEachEntryIndex { keyIndex, valueIndex in
            let value = vocab.child(valueIndex, "<entry>")
            let id = try value.int()
            guard id >= 0, id < TokenTable.maxID else { throw value.error("token id \(id) is out of range") }
            try document.withStringBytes(document.nodes[keyIndex]) { try table.insert($0, id: Int32(id)) }
        }
        vocabulary = table

        let list = try json.required("merges")
        let prefixLength = continuingSubwordPrefix?.utf8.count ?? 0
        var merges: [UInt64: UInt64] = [:]
        merges.reserveCapacity(Int(list.node.count))
        var scratch: [UInt8] = []
        try list.forEachElementIndex { rank, index in
            let entry = list.child(index, "[\(rank)]")
            func fail(_ message: String) -> TokenizerError {
                TokenizerError(.invalidModel, message, path: path, key: "model.merges[\(rank)]")
            }
            switch entry.kind {
            case .string:
                // The legacy form: "a b", exactly one space.
                try document.withStringBytes(entry.node) { bytes in
                    guard let space = bytes.firstIndex(of: 0x20), !bytes[(space + 1)...].contains(0x20) else {
                        throw fail("a merge must be two tokens separated by one space")
                    }
                    try Self.addMerge(
                        left: UnsafeBufferPointer(rebasing: bytes[..<space]),
                        right: UnsafeBufferPointer(rebasing: bytes[(space + 1)...]), rank: rank,
                        prefixLength: prefixLength, vocabulary: table, scratch: &scratch, into: &merges, fail: fail)
                }
            case .array:
                let nodes = document.nodes
                guard entry.node.count == 2, nodes[index + 1].kind == .string, nodes[index + 2].kind == .string else {
                    throw fail("a merge must be a pair of strings")
                }
                try document.withStringBytes(nodes[index + 1]) { left in
                    try document.withStringBytes(nodes[index + 2]) { right in
                        try Self.addMerge(
                            left: left, right: right, rank: rank, prefixLength: prefixLength, vocabulary: table,
                            scratch: &scratch, into: &merges, fail: fail)
                    }
                }
            default:
                throw entry.typeError("a string or a pair of strings")
            }
        }
        self.merges = merges
    }

    /// A BPE model from a token list (id = position) and "a b" merges, as GGUF stores them.
    package init(
        tokens: [String], merges mergeLines: [String], ignoreMerges: Bool = false, path: String? = nil
    ) throws {
        var table = TokenTable(expectedCount: tokens.count)
        for (id, token) in tokens.enumerated() {
            var token = token
            try token.withUTF8 { try table.insert($0, id: Int32(id)) }
        }
        var merges: [UInt64: UInt64] = [:]
        merges.reserveCapacity(mergeLines.count)
        var scratch: [UInt8] = []
        for (rank, line) in mergeLines.enumerated() {
            func fail(_ message: String) -> TokenizerError {
                TokenizerError(.invalidModel, message, path: path, key: "tokenizer.ggml.merges[\(rank)]")
            }
            var line = line
            try line.withUTF8 { bytes in
                guard let space = bytes.firstIndex(of: 0x20), !bytes[(space + 1)...].contains(0x20) else {
                    throw fail("a merge must be two tokens separated by one space")
                }
                try Self.addMerge(
                    left: UnsafeBufferPointer(rebasing: bytes[..<space]),
                    right: UnsafeBufferPointer(rebasing: bytes[(space + 1)...]), rank: rank, prefixLength: 0,
                    vocabulary: table, scratch: &scratch, into: &merges, fail: fail)
            }
        }
        vocabulary = table
        self.merges = merges
        unknownToken = nil
        fuseUnknown = false
        byteFallback = false
        self.ignoreMerges = ignoreMerges
        continuingSubwordPrefix = nil
        endOfWordSuffix = nil
    }

    private static func addMerge(
        left: UnsafeBufferPointer<UInt8>, right: UnsafeBufferPointer<UInt8>, rank: Int, prefixLength: Int,
        vocabulary: TokenTable, scratch: inout [UInt8], into merges: inout [UInt64: UInt64],
        fail: (String) -> TokenizerError
    ) throws {
        guard let a = vocabulary.id(left) else {
            throw fail("merge token '\(String(decoding: left, as: UTF8.self))' is not in the vocabulary")
        }
        guard let b = vocabulary.id(right) else {
            throw fail("merge token '\(String(decoding: right, as: UTF8.self))' is not in the vocabulary")
        }
        // The merged token drops the right side's continuing-subword prefix (tokenizers cuts its length in bytes).
        guard right.count >= prefixLength else { throw fail("merge token is shorter than the subword prefix") }
        scratch.removeAll(keepingCapacity: true)
        scratch.append(contentsOf: left)
        scratch.append(contentsOf: right[prefixLength...])
        guard let merged = scratch.withUnsafeBufferPointer({ vocabulary.id($0) }) else {
            throw fail("merged token '\(String(decoding: scratch, as: UTF8.self))' is not in the vocabulary")
        }
        merges[UInt64(UInt32(bitPattern: a)) << 32 | UInt64(UInt32(bitPattern: b))] =
            UInt64(rank) << 32 | UInt64(UInt32(bitPattern: merged))
    }

    /// The id of a token, by its exact text.
    package func id(of token: String) -> Int32? { vocabulary.id(token) }

    /// The text of token `id` as stored in the vocabulary (byte-level characters for GPT-2-style models).
    package func token(_ id: Int32) -> String? {
        vocabulary.bytes(of: id).map { String(decoding: $0, as: UTF8.self) }
    }
}
