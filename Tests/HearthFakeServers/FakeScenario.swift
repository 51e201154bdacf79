import Foundation

/// What a fake DashScope server does with a prompt, chosen by a keyword in the prompt's text,
/// so one running fake serves every scenario (the Swift tests, `hearth chat` and the official
/// SDK in scripts/check-dashscope-fakes.sh all pick them the same way).
public enum FakeScenario: String, Sendable, CaseIterable {
    /// The answer, streamed in full.
    case normal
    /// Like ``normal``, but slowly (80 ms between pieces), so a client can interrupt it.
    case slow = "#slow"
    /// A third of the answer, then the server's error event (dialog: `Error` 500
    /// InternalLLMError; generation: `event:error` DataInspectionFailed).
    case errorMidAnswer = "#error"
    /// Accepts the request and then sends nothing more.
    case silent = "#silent"
    /// A third of the answer, then the TCP connection is dropped (no close frame, no end marker).
    case drop = "#drop"
    /// Dialog: a third of the answer, then a close frame with code 1011 (internal error).
    case closeFrame = "#close"
    /// Dialog: a third of the answer, then `task-failed` InternalError in the header (the
    /// service ends the task and the connection).
    case taskFailed = "#task-failed"
    /// Dialog: a header `status_code` 449 TooManyInterrupt error, as the service sends it.
    case tooManyInterrupts = "#449"
    /// Generation: HTTP 429 Throttling.RateQuota with `Retry-After: 1`.
    case rateLimited = "#429"
    /// Generation: HTTP 429 for the first request with this prompt, then the answer.
    case rateLimitedOnce = "#429-once"
    /// Generation: HTTP 400 InvalidParameter "Range of input length should be [1, 30720]".
    case overflow = "#overflow"
    /// Generation: HTTP 500 InternalError before any text.
    case serverError = "#500"
    /// Generation: the answer ends with `finish_reason` "length".
    case length = "#length"

    /// The scenario a prompt asks for (the first keyword it contains), else ``normal``.
    public static func of(_ prompt: String) -> FakeScenario {
        // Longest keywords first, so "#429-once" is not read as "#429".
        let keyed = allCases.filter { $0 != .normal }.sorted { $0.rawValue.count > $1.rawValue.count }
        return keyed.first { prompt.contains($0.rawValue) } ?? .normal
    }
}

/// The answers a fake gives: fixed ones by prompt, else a default that names the prompt and
/// the round of the dialog, with characters of every UTF-8 length (1 to 4 bytes).
public struct FakeAnswers: Sendable {
    /// Answers by exact prompt.
    public var byPrompt: [String: String]

    /// Creates an answer book.
    public init(_ byPrompt: [String: String] = [:]) {
        self.byPrompt = byPrompt
    }

    /// The answer to `prompt` in round `round` (1-based) of a dialog.
    public func answer(to prompt: String, round: Int) -> String {
        if let fixed = byPrompt[prompt] { return fixed }
        let topic = prompt.replacingOccurrences(of: "#", with: "")
        return "好的！这是我们对话的第\(round)轮。你说的是「\(topic)」。"
            + "杭州的西湖很美，春天的时候桃花盛开 🌸，游客很多。Ça va? 一切都好 👍。"
    }

    /// Reads a JSON object of prompts to answers.
    public static func load(_ url: URL) throws -> FakeAnswers {
        let data = try Data(contentsOf: url)
        return FakeAnswers(try JSONDecoder().decode([String: String].self, from: data))
    }
}

/// A small deterministic random generator (SplitMix64), so a fake's splits repeat run to run.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Starts from `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Byte offsets that cut `text` into pieces of `sizes` bytes each (the last may be shorter),
/// falling anywhere, inside a UTF-8 character too.
func byteCuts(_ text: String, sizes: ClosedRange<Int>, using random: inout SplitMix64) -> [Int] {
    let total = text.utf8.count
    var cuts: [Int] = []
    var at = 0
    while true {
        at += Int.random(in: sizes, using: &random)
        guard at < total else { break }
        cuts.append(at)
    }
    return cuts + [total]
}

/// Character offsets that cut `text` into pieces of 1 to 3 characters (whole characters, as a
/// JSON string must hold them).
func characterCuts(_ text: String, using random: inout SplitMix64) -> [String.Index] {
    var cuts: [String.Index] = []
    var index = text.startIndex
    while index < text.endIndex {
        index = text.index(index, offsetBy: Int.random(in: 1...3, using: &random), limitedBy: text.endIndex) ?? text.endIndex
        cuts.append(index)
    }
    return cuts
}

/// Serialises a JSON object with sorted keys (the fakes' frames).
func json(_ object: [String: Any]) -> String {
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    return String(decoding: data, as: UTF8.self)
}

/// A request id in DashScope's shape (a lower-case UUID).
func requestID() -> String { UUID().uuidString.lowercased() }
