import HearthLocal

/// Lists a reply's tokens so that their texts join to exactly the reply's text, as the official
/// APIs' logprobs do (llama.cpp's logprobs tests check it):
///
/// - a token is listed once the text it produced has gone out: text held back while it may
///   begin a stop string, or while a character is incomplete, releases its tokens when it is sent;
/// - a token whose text never goes out — a stop string's, the end token's, a tool call's — is
///   not listed;
/// - a token a stop string cuts in two is listed with its part before the stop.
///
/// Tokens are matched to the text by their bytes (``LocalProvider/LocalToken/bytes``, the
/// reply's dropped leading space already left out), so a character split over several tokens
/// counts right.
struct LogprobAligner: Sendable {
    private var queue: [LocalProvider.LocalToken] = []
    /// Bytes of reply text sent, and of the tokens listed so far.
    private var textBytes = 0
    private var listedBytes = 0

    /// Takes a token and the text sent with it; returns the tokens whose text has now gone out.
    mutating func add(_ token: LocalProvider.LocalToken?, text: String) -> [LocalProvider.LocalToken] {
        textBytes += text.utf8.count
        if let token { queue.append(token) }
        var listed: [LocalProvider.LocalToken] = []
        while let next = queue.first, listedBytes + next.bytes.count <= textBytes {
            queue.removeFirst()
            // A token that adds nothing to the text (a control token, a dropped lone space) is left out.
            guard !next.bytes.isEmpty else { continue }
            listedBytes += next.bytes.count
            listed.append(next)
        }
        return listed
    }

    /// The end of the reply: the token the text ends within, cut to its part in the text (the
    /// rest of the queue produced no text).
    mutating func finish() -> [LocalProvider.LocalToken] {
        defer {
            queue = []
            listedBytes = textBytes
        }
        guard listedBytes < textBytes, var last = queue.first(where: { !$0.bytes.isEmpty }) else { return [] }
        last.bytes = Array(last.bytes.prefix(textBytes - listedBytes))
        last.piece = String(decoding: last.bytes, as: UTF8.self)
        return [last]
    }

    /// A whole reply's tokens as listed for its text.
    static func align(_ tokens: [LocalProvider.LocalToken], to text: String) -> [LocalProvider.LocalToken] {
        var aligner = LogprobAligner()
        aligner.textBytes = text.utf8.count
        var listed: [LocalProvider.LocalToken] = []
        for token in tokens { listed += aligner.add(token, text: "") }
        return listed + aligner.finish()
    }
}
