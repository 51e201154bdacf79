import Foundation
import HearthEngine
import HearthProviders
import HearthTokenizers

/// The second half of ``LocalProvider``'s one generation loop: each choice's generated tokens
/// turned into the events a caller reads — text split from tool calls by the choice's scanner,
/// each token's piece as it stands in the reply (so the log-probability tokens join to exactly
/// the text), the time to the first token, and the choice's end with its usage and reason.
struct LocalChoiceTranslator {
    let tokenizer: any Tokenizer
    let started: DispatchTime
    let emit: @Sendable (LocalProvider.LocalChoiceEvent) -> Void
    /// Per choice: what its pieces still drop at their start — the reply's first space
    /// (SentencePiece's dummy prefix, on the first token with bytes) and, with a tool-call
    /// scanner, the reply's leading white space; the alternatives at those positions lose the same.
    var trims: [(space: Bool, whitespace: Bool)]
    /// Per choice: the tool-call scanner (nil without tools).
    var scanners: [ToolCallScanner?]
    /// Per choice: set when the reply repeats a call exactly — the sequence stops like a
    /// cancellation and still ends with its summary, reported as the calls' end.
    let stops: [CancellationFlag]
    var firstToken: Double?

    init(
        count: Int, parameters: GenerationParameters, tokenizer: any Tokenizer, scanners: [ToolCallScanner?],
        started: DispatchTime, emit: @escaping @Sendable (LocalProvider.LocalChoiceEvent) -> Void
    ) {
        self.tokenizer = tokenizer
        self.started = started
        self.emit = emit
        self.scanners = scanners
        trims = scanners.map { (space: parameters.stripLeadingSpace && parameters.constraint == nil, whitespace: $0 != nil) }
        stops = (0..<count).map { _ in CancellationFlag() }
    }

    /// `id`'s bytes as they stand in the reply under `trim`.
    func pieceBytes(_ id: Int32, _ trim: (space: Bool, whitespace: Bool)) -> [UInt8] {
        var bytes = tokenizer.bytes(of: id) ?? []
        if trim.space, bytes.first == 0x20 { bytes.removeFirst() }
        if trim.whitespace { bytes = Array(bytes.drop { $0 == 0x20 || (0x09...0x0d).contains($0) }) }
        return bytes
    }

    func piece(_ id: Int32, _ trim: (space: Bool, whitespace: Bool)) -> String {
        String(decoding: pieceBytes(id, trim), as: UTF8.self)
    }

    /// Emits the scanner's calls as their own events and returns its text.
    func emitCalls(_ outputs: [ToolCallScanner.Output], choice: Int) -> String {
        var text = ""
        for output in outputs {
            switch output {
            case .text(let piece): text += piece
            case .call(let step): emit(LocalProvider.LocalChoiceEvent(choice: choice, event: .toolCall(step)))
            }
        }
        return text
    }

    /// One generated token of choice `index`: its event, then any call the scanner completed.
    mutating func token(_ token: GeneratedToken, choice index: Int) {
        if firstToken == nil {
            firstToken = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        }
        // With tools, the scanner splits the text: calls go out as their own events (after this
        // token's event), text stays on the token.
        var callEvents: [ToolCallScanner.Output] = []
        var text = token.text
        if scanners[index] != nil {
            let outputs = scanners[index]?.feed(token.text) ?? []
            text = outputs.reduce(into: "") { if case .text(let piece) = $1 { $0 += piece } }
            callEvents = outputs.filter { if case .call = $0 { true } else { false } }
            if scanners[index]?.repeatedCall == true { stops[index].set() }
        }
        let trim = trims[index]
        // A control token (the end token) adds no text: its listing is empty; so does a token of
        // the reasoning block, which is not the reply's text.
        let tokenBytes = tokenizer.isSpecial(token.id) || token.inReasoning ? [] : pieceBytes(token.id, trim)
        let tokenPiece = String(decoding: tokenBytes, as: UTF8.self)
        if trim.space, !tokenizer.isSpecial(token.id), !(tokenizer.bytes(of: token.id) ?? []).isEmpty { trims[index].space = false }
        if trim.whitespace, tokenPiece.contains(where: { !$0.isWhitespace }) { trims[index].whitespace = false }
        // The answer after a reasoning block starts without white space (the separator).
        if token.endsReasoning, token.text.isEmpty { trims[index].whitespace = true }
        emit(
            LocalProvider.LocalChoiceEvent(
                choice: index,
                event: .token(
                    LocalProvider.LocalToken(
                        text: text, piece: tokenPiece, bytes: tokenBytes, logprob: Double(token.logprob),
                        topLogprobs: token.topLogprobs.map { (piece($0.id, trim), Double($0.logprob)) },
                        reasoning: token.reasoning, endsReasoning: token.endsReasoning))))
        _ = emitCalls(callEvents, choice: index)
    }

    /// Choice `index` ended: the scanner's rest, then its end with usage and reason.
    mutating func done(_ summary: GenerationSummary, choice index: Int) {
        let rest = emitCalls(scanners[index]?.finish() ?? [], choice: index)
        if !rest.isEmpty {
            emit(LocalProvider.LocalChoiceEvent(choice: index, event: .token(LocalProvider.LocalToken(text: rest, piece: "", logprob: 0, topLogprobs: []))))
        }
        let reason = LocalProvider.finishReason(
            summary.finishReason, stopped: stops[index].isSet, madeCalls: scanners[index]?.madeCalls == true)
        let usage = LocalProvider.usage(summary, timeToFirstToken: firstToken)
        emit(LocalProvider.LocalChoiceEvent(choice: index, event: .finished(usage, reason)))
    }
}
