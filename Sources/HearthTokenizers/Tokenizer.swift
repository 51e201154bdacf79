/// Text ⇄ token ids for one model.
public protocol Tokenizer: Sendable {
    /// Ids below this are valid.
    var vocabularySize: Int { get }
    /// The beginning-of-sequence id, if the vocabulary has one.
    var bosID: Int32? { get }
    /// Whether `encode(_:addSpecialTokens: true)` prepends BOS.
    var addsBOS: Bool { get }
    /// End-of-sequence ids the tokenizer itself declares.
    var eosIDs: Set<Int32> { get }
    /// The chat template, if the checkpoint ships one Hearth understands.
    var chatTemplate: ChatTemplate? { get }
    /// A short description for `inspect` ("sentencepiece-bpe", …).
    var kind: String { get }

    /// Encodes text. Added/special tokens written in the text are matched as tokens.
    /// With `addSpecialTokens`, BOS/EOS are added as the tokenizer config says.
    func encode(_ text: String, addSpecialTokens: Bool) throws -> [Int32]

    /// Encodes as ``encode(_:addSpecialTokens:)`` does, or returns nil when the answer has
    /// more than `limit` ids, possibly without encoding all of the text (what a server needs
    /// to refuse a prompt that cannot fit its context). Never nil for an answer of at most
    /// `limit` ids. Default: encodes everything, then compares.
    func encode(_ text: String, addSpecialTokens: Bool, limit: Int) throws -> [Int32]?

    /// The bytes a token stands for when decoding (`▁` as a space, `<0xNN>` as that byte),
    /// or nil for a control token that has no text.
    func bytes(of id: Int32) -> [UInt8]?

    /// Whether `id` is a special (control) token, skipped when decoding for display.
    func isSpecial(_ id: Int32) -> Bool

    /// The id of an exact token string (piece or added token), if any.
    func id(of token: String) -> Int32?

    /// A token as the vocabulary writes it (`<eos>`, `▁the`), for people reading ids; nil
    /// outside the vocabulary. Default: the token's decoded bytes.
    func token(_ id: Int32) -> String?

    /// Whether the tokenizer's decoder drops one leading space from the decoded text (the
    /// `Strip`/`Metaspace` decoders of Llama-style tokenizer.json files). Default: false.
    var decoderStripsLeadingSpace: Bool { get }
}

extension Tokenizer {
    package var decoderStripsLeadingSpace: Bool { false }

    package func encode(_ text: String, addSpecialTokens: Bool, limit: Int) throws -> [Int32]? {
        let ids = try encode(text, addSpecialTokens: addSpecialTokens)
        return ids.count <= limit ? ids : nil
    }

    package func token(_ id: Int32) -> String? { bytes(of: id).map { String(decoding: $0, as: UTF8.self) } }

    /// Decodes ids to text, skipping special tokens, with invalid UTF-8 replaced by U+FFFD.
    public func decode(_ ids: [Int32], skipSpecialTokens: Bool = true) -> String {
        var detokenizer = StreamingDetokenizer(
            tokenizer: self, skipSpecialTokens: skipSpecialTokens, stripLeadingSpace: decoderStripsLeadingSpace)
        var text = ""
        for id in ids { text += detokenizer.push(id) }
        return text + detokenizer.flush()
    }
}
