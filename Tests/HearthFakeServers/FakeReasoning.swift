import Foundation

/// What the fakes think, and how the fake Anthropic signs and checks thinking blocks.
///
/// The thinking names the prompt and has characters of every UTF-8 length, so a client that
/// splits or joins pieces wrongly shows it. A signature is a keyed hash of the block's text:
/// the fake refuses a thinking block sent back without it or with it altered, as Anthropic does
/// (`Invalid signature in thinking block`), and a redacted block whose data it did not make.
public enum FakeReasoning {
    /// The reasoning of a reply to `prompt`.
    public static func thought(for prompt: String) -> String {
        let topic = prompt.replacingOccurrences(of: "#", with: "").prefix(40)
        return "The user asks about “\(topic)”. 先想一想：西湖在杭州 🌸, Ça marche — answer briefly."
    }

    /// The signature of a thinking block with text `text` (base64 of a keyed FNV-1a hash).
    public static func signature(of text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array("hearth-fake-signing-key:".utf8) + Array(text.utf8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return Data(("EqQBCkgIARABGAIiQ" + String(hash, radix: 16)).utf8).base64EncodedString()
    }

    /// The opaque data of the fake's `redacted_thinking` block.
    public static let redactedData = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"

    /// Whether the prompt asks the fake to reason whatever the request says (`#think`).
    public static func asked(in prompt: String) -> Bool { prompt.contains("#think") }

    /// The problem with a thinking block sent back, or nil: a `thinking` block needs its text and
    /// the signature the fake gave that text; a `redacted_thinking` block the fake's data.
    static func problem(_ block: [String: Any], at: String) -> String? {
        switch block["type"] as? String {
        case "thinking":
            guard let text = block["thinking"] as? String else { return "\(at).thinking: Field required" }
            guard let signature = block["signature"] as? String else { return "\(at).signature: Field required" }
            guard signature == Self.signature(of: text) else { return "\(at): Invalid `signature` in `thinking` block" }
            return nil
        case "redacted_thinking":
            guard block["data"] as? String == redactedData else { return "\(at): Invalid `data` in `redacted_thinking` block" }
            return nil
        default:
            return "\(at) is not a thinking block"
        }
    }
}
