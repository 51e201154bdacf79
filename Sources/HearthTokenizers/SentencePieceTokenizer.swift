import Foundation

/// A Hugging Face Llama-style tokenizer: `tokenizer.model` (SentencePiece) plus the added
/// tokens and flags of `tokenizer_config.json`, giving the ids transformers gives.
///
/// Added tokens are matched in the text first (longest match, honouring lstrip/rstrip);
/// the pieces between them go to SentencePiece. With `legacy: false` only text at the very
/// start of the input gets SentencePiece's dummy-prefix space, not text after an added token.
package final class SentencePieceTokenizer: Tokenizer {
    /// The SentencePiece model with its own normalizer settings.
    package let model: SentencePieceModel
    /// The checkpoint's tokenizer configuration.
    package let config: TokenizerConfig
    package let vocabularySize: Int
    package let bosID: Int32?
    package let addsBOS: Bool
    private let addsEOS: Bool
    package let eosIDs: Set<Int32>
    package let chatTemplate: ChatTemplate?
    package var kind: String { "sentencepiece" }

    private let added: [AddedToken]
    private let addedByContent: [String: AddedToken]
    private let specialIDs: Set<Int32>
    private let tokenBytes: [[UInt8]?]
    private let legacy: Bool

    /// Loads `tokenizer.model`, `tokenizer_config.json` and `added_tokens.json` from `directory`.
    package convenience init(directory: URL) throws {
        try self.init(files: TokenizerFiles(directory: directory))
    }

    /// Builds the tokenizer from its files.
    package init(files: TokenizerFiles) throws {
        let modelPath = files.origin + "/tokenizer.model"
        guard let proto = files.sentencePieceModel else {
            throw TokenizerError(
                .fileNotFound, "no tokenizer.model", path: files.origin,
                remedy: "Download the checkpoint's tokenizer.model next to config.json")
        }
        model = try SentencePieceModel(protoBytes: proto, path: modelPath)
        config = try TokenizerConfig.parse(files: files)
        legacy = config.legacy ?? true

        added = config.addedTokens
        var byContent: [String: AddedToken] = [:]
        for token in added { byContent[token.content] = token }
        addedByContent = byContent

        let maxAdded = added.map { Int($0.id) + 1 }.max() ?? 0
        vocabularySize = max(model.vocabularySize, maxAdded)

        var bytes: [[UInt8]?] = []
        bytes.reserveCapacity(vocabularySize)
        var special = Set<Int32>()
        for id in 0..<model.vocabularySize {
            let piece = model.pieces[id]
            switch model.kinds[id] {
            case .control, .unused:
                bytes.append(nil)
                special.insert(Int32(id))
            case .unknown:
                bytes.append(Array(" \u{2047} ".utf8))  // how SentencePiece renders <unk>
            case .byte:
                bytes.append(Self.parseByte(piece).map { [$0] } ?? [])
            case .normal, .userDefined:
                bytes.append(Array(piece.replacingOccurrences(of: "\u{2581}", with: " ").utf8))
            }
        }
        while bytes.count < vocabularySize { bytes.append(nil) }
        for token in added where Int(token.id) < vocabularySize {
            bytes[Int(token.id)] = Array(token.content.utf8)
            if token.special { special.insert(token.id) } else { special.remove(token.id) }
        }
        tokenBytes = bytes
        specialIDs = special

        if let bos = config.bosToken, let id = byContent[bos]?.id ?? model.id(ofPiece: bos) {
            bosID = id
        } else {
            bosID = model.bosID >= 0 ? model.bosID : nil
        }
        addsBOS = config.addBOSToken ?? true
        addsEOS = config.addEOSToken ?? false
        var eos = Set<Int32>()
        if let text = config.eosToken, let id = byContent[text]?.id ?? model.id(ofPiece: text) {
            eos.insert(id)
        } else if model.eosID >= 0 {
            eos.insert(model.eosID)
        }
        eosIDs = eos
        let tokenizerConfig = config
        chatTemplate = tokenizerConfig.ownChatTemplate
    }

    package func encode(_ text: String, addSpecialTokens: Bool) throws -> [Int32] {
        var ids: [Int32] = []
        if addSpecialTokens && addsBOS, let bosID { ids.append(bosID) }
        for segment in splitOnAddedTokens(text) {
            switch segment {
            case .token(let id):
                ids.append(id)
            case .text(let piece, let atStart):
                if legacy {
                    ids += try model.encode(piece)
                } else {
                    // Like transformers' Metaspace(prepend_scheme: first): only the text at the very
                    // start gets the prefix space, and only when it does not start with one already.
                    let startsWithSpace = piece.hasPrefix(" ") || piece.hasPrefix("\u{2581}")
                    let prefix = atStart && !startsWithSpace && model.addsDummyPrefix && (config.addPrefixSpace ?? true)
                    ids += model.encode(prefix ? " " + piece : piece, addDummyPrefix: false)
                }
            }
        }
        if addSpecialTokens && addsEOS, let eos = eosIDs.min() { ids.append(eos) }
        return ids
    }

    package func bytes(of id: Int32) -> [UInt8]? {
        guard id >= 0, Int(id) < tokenBytes.count else { return nil }
        return tokenBytes[Int(id)]
    }

    package func isSpecial(_ id: Int32) -> Bool { specialIDs.contains(id) }

    package func token(_ id: Int32) -> String? {
        if let added = addedByContent.values.first(where: { $0.id == id }) { return added.content }
        return id >= 0 && Int(id) < model.pieces.count ? model.pieces[Int(id)] : nil
    }

    package func id(of token: String) -> Int32? {
        addedByContent[token]?.id ?? model.id(ofPiece: token)
    }

    enum Segment: Equatable {
        case text(String, atStart: Bool)
        case token(Int32)
    }

    /// Splits text on added tokens, leftmost-longest, applying their lstrip/rstrip.
    func splitOnAddedTokens(_ text: String) -> [Segment] {
        guard !added.isEmpty else { return text.isEmpty ? [] : [.text(text, atStart: true)] }
        let bytes = Array(text.utf8)
        var raw: [(isToken: Bool, start: Int, end: Int, token: AddedToken?)] = []
        var textStart = 0
        var i = 0
        while i < bytes.count {
            var best: AddedToken?
            var bestLength = 0
            for token in added {
                let content = token.content.utf8
                if content.count > bestLength, i + content.count <= bytes.count,
                    content.elementsEqual(bytes[i..<(i + content.count)])
                {
                    best = token
                    bestLength = content.count
                }
            }
            if let best {
                if textStart < i { raw.append((false, textStart, i, nil)) }
                raw.append((true, i, i + bestLength, best))
                i += bestLength
                textStart = i
            } else {
                i += 1
            }
        }
        if textStart < bytes.count { raw.append((false, textStart, bytes.count, nil)) }

        // Decode text pieces and apply whitespace stripping around tokens.
        var texts: [String?] = raw.map { $0.isToken ? nil : String(decoding: bytes[$0.start..<$0.end], as: UTF8.self) }
        for (k, part) in raw.enumerated() where part.isToken {
            guard let token = part.token else { continue }
            if token.lstrip, k > 0, let left = texts[k - 1] {
                texts[k - 1] = String(left.reversed().drop(while: \.isWhitespace).reversed())
            }
            if token.rstrip, k + 1 < raw.count, let right = texts[k + 1] {
                texts[k + 1] = String(right.drop(while: \.isWhitespace))
            }
        }
        var segments: [Segment] = []
        for (k, part) in raw.enumerated() {
            if let token = part.token {
                segments.append(.token(token.id))
            } else if let t = texts[k], !t.isEmpty {
                segments.append(.text(t, atStart: part.start == 0))
            }
        }
        return segments
    }

    private static func parseByte(_ piece: String) -> UInt8? {
        guard piece.hasPrefix("<0x"), piece.hasSuffix(">"), piece.count == 6 else { return nil }
        return UInt8(piece.dropFirst(3).dropLast(), radix: 16)
    }
}
