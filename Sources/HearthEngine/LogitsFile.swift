import Foundation
import HearthTokenizers

/// The next-token distributions of one teacher-forced run over a text: what
/// `hearth perplexity --save-logits` writes and `--kl-divergence-base` reads back, so a
/// second run (another quantization, kernel level, engine build) can be compared with the
/// first position by position — llama-perplexity's KL-divergence mode.
///
/// Each scored position keeps the **top K** entries of the distribution (id and log p, most
/// likely first), the probability mass of everything else, and log p of the token that
/// actually came next. With K = 32 a position takes 264 bytes (Gemma 3's 262,144-token
/// vocabulary would take 512 KiB per position in full f16); K equal to the vocabulary size
/// stores the whole distribution and makes the KL divergence exact. With K below the
/// vocabulary, the KL divergence is the one of the distributions coarse-grained to "the
/// base's top K, and the rest" (``DistributionComparison``), a lower bound of the full one
/// that differs from it only by the mass outside the top K.
///
/// Layout (integers and floats little-endian):
///
/// | bytes | field |
/// |---|---|
/// | 8 | magic `HRTHLG01` |
/// | 4 | format version (``formatVersion``) |
/// | 4 | header length `h` |
/// | h | ``Header`` as JSON |
/// | 4 × `tokenCount` | the text's tokens the run evaluated, `chunks × ctx` ids |
/// | per scored position | f32 log p(next token), f32 probability outside the top K, K × (u32 id, f32 log p) |
/// | 8 | FNV-1a 64 of every byte before it |
///
/// Positions run chunk by chunk, and within a chunk from ``Header/first`` to `ctx − 2`.
package struct LogitsFile: Sendable, Equatable {
    /// The format this build writes and reads.
    package static let formatVersion: UInt32 = 1
    static let magic = Array("HRTHLG01".utf8)

    /// What the run was: the model's shape and vocabulary, and how the text was cut.
    package struct Header: Codable, Sendable, Equatable {
        /// `architectures[0]` or `general.architecture` (informational).
        package var architecture: String
        /// The model file or directory name (informational).
        package var model: String
        /// Decoder layers.
        package var layers: Int
        /// Hidden size.
        package var hiddenSize: Int
        /// Attention heads, key/value heads and MLP width.
        package var heads: Int
        package var kvHeads: Int
        package var ffnSize: Int
        /// Vocabulary size (logits per position).
        package var vocabSize: Int
        /// ``LogitsFile/vocabularyHash(_:)`` of the tokenizer, hex.
        package var vocabularyHash: String
        /// Tokens per chunk.
        package var ctx: Int
        /// First scored position in each chunk.
        package var first: Int
        /// Number of chunks evaluated.
        package var chunks: Int
        /// Entries kept per position.
        package var topK: Int

        /// A header from its fields.
        package init(
            architecture: String, model: String, layers: Int, hiddenSize: Int, heads: Int, kvHeads: Int, ffnSize: Int,
            vocabSize: Int, vocabularyHash: String, ctx: Int, first: Int, chunks: Int, topK: Int
        ) {
            self.architecture = architecture
            self.model = model
            self.layers = layers
            self.hiddenSize = hiddenSize
            self.heads = heads
            self.kvHeads = kvHeads
            self.ffnSize = ffnSize
            self.vocabSize = vocabSize
            self.vocabularyHash = vocabularyHash
            self.ctx = ctx
            self.first = first
            self.chunks = chunks
            self.topK = topK
        }

        /// Layers, widths and heads, for messages: "2 layers, hidden 64, 4/2 heads, MLP 128".
        package var shape: String { "\(layers) layers, hidden \(hiddenSize), \(heads)/\(kvHeads) heads, MLP \(ffnSize)" }

        /// Scored positions per chunk.
        package var positionsPerChunk: Int { max(0, ctx - 1 - first) }
        /// Scored positions in the file.
        package var positionCount: Int { chunks * positionsPerChunk }

        enum CodingKeys: String, CodingKey {
            case architecture, model, layers, ctx, first, chunks
            case heads, kvHeads = "kv_heads", ffnSize = "ffn_size"
            case hiddenSize = "hidden_size", vocabSize = "vocab_size", vocabularyHash = "vocabulary_hash", topK = "top_k"
        }
    }

    /// The run's description.
    package var header: Header
    /// The text's tokens, `chunks × ctx` (before each chunk's first token became BOS).
    package var tokens: [Int32]
    /// log p(next token) per scored position.
    package var nextLogprobs: [Float]
    /// Probability mass outside the top K per scored position (0 when K is the vocabulary).
    package var restProbabilities: [Float]
    /// Top-K ids per position, `positionCount × topK`, most likely first.
    package var topIDs: [Int32]
    /// Their log-probabilities, same layout.
    package var topLogprobs: [Float]

    /// An empty file for a run described by `header`; fill it with ``append(logits:next:)``.
    package init(header: Header, tokens: [Int32]) {
        self.header = header
        self.tokens = tokens
        nextLogprobs = []
        restProbabilities = []
        topIDs = []
        topLogprobs = []
        nextLogprobs.reserveCapacity(header.positionCount)
        topIDs.reserveCapacity(header.positionCount * header.topK)
        topLogprobs.reserveCapacity(header.positionCount * header.topK)
    }

    /// Positions recorded so far.
    package var positionCount: Int { nextLogprobs.count }

    /// Records one position from its raw logits (`vocabSize` values), their log Σ exp
    /// (`LogProbabilities.normalizer`) and the token that came next.
    package mutating func append(logits: UnsafeBufferPointer<Float>, normalizer: Float, next: Int32) {
        let k = header.topK
        var mass = 0.0
        if k >= logits.count {
            // The whole distribution, in id order (no sort needed: nothing is left out).
            for i in 0..<logits.count {
                topIDs.append(Int32(i))
                topLogprobs.append(logits[i] - normalizer)
            }
            restProbabilities.append(0)
        } else {
            for (id, logprob) in LogProbabilities.top(k, in: logits, normalizer: normalizer) {
                topIDs.append(id)
                topLogprobs.append(logprob)
                mass += exp(Double(logprob))
            }
            restProbabilities.append(Float(max(0, 1 - mass)))
        }
        nextLogprobs.append(LogProbabilities.of(next, in: logits, normalizer: normalizer))
    }

    /// The entries of position `index`: ids and log-probabilities.
    package func top(_ index: Int) -> (ids: ArraySlice<Int32>, logprobs: ArraySlice<Float>) {
        let range = (index * header.topK)..<((index + 1) * header.topK)
        return (topIDs[range], topLogprobs[range])
    }

    /// FNV-1a 64 over every token's bytes and special flag, in id order: two tokenizers with
    /// the same hash map ids to the same text.
    package static func vocabularyHash(_ tokenizer: any Tokenizer) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        for id in 0..<Int32(tokenizer.vocabularySize) {
            for byte in tokenizer.bytes(of: id) ?? [] { mix(byte) }
            mix(tokenizer.isSpecial(id) ? 1 : 0)
            mix(0xff)
        }
        return String(hash, radix: 16)
    }

    // MARK: Serialisation

    /// The file's bytes (layout above).
    package func serialized() throws -> Data {
        let headerJSON = try JSONEncoder().encode(header)
        var data = Data()
        data.reserveCapacity(24 + headerJSON.count + 4 * tokens.count + positionCount * (8 + 8 * header.topK))
        data.append(contentsOf: Self.magic)
        data.appendLE(Self.formatVersion)
        data.appendLE(UInt32(headerJSON.count))
        data.append(headerJSON)
        for token in tokens { data.appendLE(UInt32(bitPattern: token)) }
        for p in 0..<positionCount {
            data.appendLE(nextLogprobs[p].bitPattern)
            data.appendLE(restProbabilities[p].bitPattern)
            for i in (p * header.topK)..<((p + 1) * header.topK) {
                data.appendLE(UInt32(bitPattern: topIDs[i]))
                data.appendLE(topLogprobs[i].bitPattern)
            }
        }
        data.appendLE(snapshotChecksum(data))
        return data
    }

    /// Reads a file written by ``serialized()``.
    /// - Throws: `EngineError` `.invalidLogitsFile` naming what is wrong (magic, version,
    ///   header, truncation, checksum, ids outside the vocabulary).
    package init(data: Data, name: String = "logits file") throws {
        func bad(_ message: String) -> EngineError {
            EngineError(.invalidLogitsFile, "\(name): \(message)", remedy: "Write it again with `hearth perplexity --save-logits`")
        }
        let bytes = [UInt8](data)
        func u32(_ offset: Int) -> UInt32 {
            UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
                | UInt32(bytes[offset + 3]) << 24
        }
        guard bytes.count >= 16, Array(bytes[0..<8]) == Self.magic else { throw bad("not a Hearth logits file (bad magic)") }
        let version = u32(8)
        guard version == Self.formatVersion else {
            throw bad("format version \(version); this build reads version \(Self.formatVersion)")
        }
        let headerLength = Int(u32(12))
        guard headerLength <= 1 << 20, bytes.count >= 16 + headerLength else { throw bad("truncated header") }
        let header: Header
        do { header = try JSONDecoder().decode(Header.self, from: Data(bytes[16..<(16 + headerLength)])) } catch {
            throw bad("unreadable header (\(error))")
        }
        guard header.vocabSize > 0, header.vocabSize <= 1 << 24, header.ctx >= 2, header.ctx <= 1 << 24,
            header.first >= 0, header.first < header.ctx - 1, header.chunks >= 0, header.chunks <= 1 << 24,
            header.topK >= 1, header.topK <= header.vocabSize
        else { throw bad("header values out of range") }
        // Sizes from a hostile header must not overflow: every product is checked.
        func product(_ a: Int, _ b: Int) -> Int? {
            let (value, overflow) = a.multipliedReportingOverflow(by: b)
            return overflow ? nil : value
        }
        let tokenCount = header.chunks * header.ctx  // both ≤ 2^24: fits
        let recordBytes = 8 + 8 * header.topK
        guard let records = product(header.positionCount, recordBytes), records <= Int.max / 2 else {
            throw bad("header values out of range")
        }
        let expected = 16 + headerLength + 4 * tokenCount + records + 8
        guard bytes.count >= expected else {
            throw bad("truncated: \(bytes.count) bytes, the header says \(expected)")
        }
        guard bytes.count == expected else { throw bad("\(bytes.count - expected) unexpected bytes after the last position") }
        guard UInt64(u32(expected - 8)) | UInt64(u32(expected - 4)) << 32 == snapshotChecksum(data.prefix(expected - 8)) else {
            throw bad("checksum mismatch (the file is damaged)")
        }
        self.init(header: header, tokens: [])
        var offset = 16 + headerLength
        for _ in 0..<tokenCount {
            let t = u32(offset)
            offset += 4
            guard t < UInt32(header.vocabSize) else { throw bad("a token id outside the vocabulary") }
            tokens.append(Int32(t))
        }
        for _ in 0..<header.positionCount {
            nextLogprobs.append(Float(bitPattern: u32(offset)))
            restProbabilities.append(Float(bitPattern: u32(offset + 4)))
            offset += 8
            for _ in 0..<header.topK {
                let id = u32(offset)
                guard id < UInt32(header.vocabSize) else { throw bad("an entry id outside the vocabulary") }
                topIDs.append(Int32(id))
                topLogprobs.append(Float(bitPattern: u32(offset + 4)))
                offset += 8
            }
        }
    }

    /// Checks that a run described by `current` over `tokens` can be compared with this file.
    /// - Throws: `EngineError` `.logitsFileMismatch` naming the first difference: another
    ///   model (layers, hidden size), another vocabulary, another context or scored range,
    ///   or another text (the first differing token).
    package func checkComparable(with current: Header, tokens currentTokens: [Int32]) throws {
        func mismatch(_ what: String, _ message: String) -> EngineError {
            EngineError(.logitsFileMismatch, "the base logits file is from another \(what): \(message)",
                remedy: "Compare runs of the same model family over the same text with the same --ctx")
        }
        let base = header
        if base.vocabSize != current.vocabSize {
            throw mismatch("vocabulary", "\(base.vocabSize) tokens in the base, \(current.vocabSize) in this model")
        }
        if base.vocabularyHash != current.vocabularyHash {
            throw mismatch("vocabulary", "same size (\(base.vocabSize)) but different tokens")
        }
        if base.shape != current.shape {
            throw mismatch("model", "the base is \(base.architecture) \(base.shape), this is \(current.architecture) \(current.shape)")
        }
        if base.ctx != current.ctx { throw mismatch("context", "the base used --ctx \(base.ctx), this run \(current.ctx)") }
        if base.first != current.first {
            throw mismatch("scored range", "the base scored from position \(base.first), this run from \(current.first)")
        }
        if base.chunks != current.chunks {
            throw mismatch("text", "the base has \(base.chunks) chunks of \(base.ctx) tokens, this run \(current.chunks)")
        }
        if tokens != currentTokens {
            let i = zip(tokens, currentTokens).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                ?? min(tokens.count, currentTokens.count)
            throw mismatch("text", "token \(i) differs (the base has \(tokens.count) tokens, this run \(currentTokens.count))")
        }
    }
}
