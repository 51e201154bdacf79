import Crypto
import Foundation
import HearthProviders

/// Reasoning on the server (docs/REASONING.md, "Server"): the requests' reasoning fields as
/// ``ReasoningOptions``, and the signature of a local model's thinking blocks.
extension RequestHints.Reasoning {
    /// The options these fields ask for, nil when the request says nothing (the model's
    /// default: a reasoning model reasons, unbounded).
    ///
    /// - OpenAI `reasoning_effort` / Responses `reasoning.effort`: `none` turns reasoning off;
    ///   `minimal`, `low`, `medium`, `high` are ``ReasoningEffort``s (their budgets are
    ///   ``ReasoningEffort/defaultBudgetTokens``); `xhigh` and `max` are `high`.
    /// - Responses `reasoning.summary`: any value asks for the reasoning shown (the local model's
    ///   is its whole text).
    /// - Anthropic `thinking`: `disabled` turns it off; `enabled` with `budget_tokens` bounds it;
    ///   `adaptive` and `between_tools` let the model reason (with `output_config.effort` when given).
    var options: ReasoningOptions? {
        guard effort != nil || summary != nil || thinking != nil || budgetTokens != nil else { return nil }
        var options = ReasoningOptions()
        if thinking == "disabled" || effort == "none" { return .off }
        switch effort {
        case "minimal"?: options.effort = .minimal
        case "low"?: options.effort = .low
        case "medium"?: options.effort = .medium
        case "high"?, "xhigh"?, "max"?: options.effort = .high
        default: break
        }
        if thinking == "enabled" { options.budgetTokens = budgetTokens }
        if summary != nil { options.summary = true }
        return options
    }
}

/// The signature of a local model's thinking block (Anthropic's `signature`, which clients send
/// back unchanged with the tool results that follow): `hearth-sha256:` and the SHA-256 of the
/// thinking text, base64. It is a checksum, not a secret: the server can tell its own blocks
/// (and that their text came back unchanged) from a cloud's, whose signatures it never sends
/// to a cloud that did not make them.
enum ReasoningSignature {
    static let prefix = "hearth-sha256:"
    /// The provider a returned block with a valid local signature is marked as: no cloud has
    /// this id, so ``ReasoningPart/belongs(to:)`` keeps it from every cloud route.
    static let localProvider = "hearth-local"

    /// The signature of `text`.
    static func sign(_ text: String) -> String {
        prefix + Data(SHA256.hash(data: Data(text.utf8))).base64EncodedString()
    }

    /// `part` with its local signature (a part that already has one keeps it).
    static func signed(_ part: ReasoningPart) -> ReasoningPart {
        var part = part
        if part.signature == nil, part.redactedData == nil { part.signature = sign(part.text) }
        return part
    }

    /// A part sent back by a client: a thinking block whose signature is this server's own
    /// and matches its text is marked as local; any other signature is kept as the cloud's.
    static func returned(text: String, signature: String?) -> ReasoningPart {
        var part = ReasoningPart(text: text, signature: signature)
        if let signature, signature.hasPrefix(prefix) {
            part.provider = signature == sign(text) ? localProvider : nil
            if part.provider == nil { part.signature = nil }  // altered text: kept as plain reasoning
        }
        return part
    }
}

extension ResponseRenderer {
    // MARK: Streaming

    /// The frames of a piece of reasoning: chat's `delta.reasoning_content`; an Anthropic
    /// `thinking` block's `thinking_delta`; a Responses `reasoning` item's
    /// `response.reasoning_text.delta` (and, when the request asked for a summary,
    /// `response.reasoning_summary_text.delta`). Text completions show none.
    mutating func reasoningFrames(_ text: String) -> [Data] {
        guard !text.isEmpty else { return [] }
        switch job.endpoint {
        case .chatCompletions:
            return [chatChunk(delta: ["reasoning_content": .string(text)], logprobs: nil, finish: nil)]
        case .completions:
            return []
        case .messages:
            var frames = openReasoning()
            frames.append(
                Self.frame(
                    ["type": "content_block_delta", "index": .int(items.count - 1), "delta": ["type": "thinking_delta", "thinking": .string(text)]],
                    event: "content_block_delta"))
            appendReasoning(text)
            return frames
        case .responses:
            var frames = openReasoning()
            let position = items.count - 1
            let itemID = reasoningItemID(position)
            frames.append(
                event(
                    "response.reasoning_text.delta",
                    ["item_id": .string(itemID), "output_index": .int(position), "content_index": 0, "delta": .string(text)]))
            if summarises {
                frames.append(
                    event(
                        "response.reasoning_summary_text.delta",
                        ["item_id": .string(itemID), "output_index": .int(position), "summary_index": 0, "delta": .string(text)]))
            }
            appendReasoning(text)
            return frames
        }
    }

    /// The frames that end a reasoning part: Anthropic's `signature_delta` (or a whole
    /// `redacted_thinking` block) and `content_block_stop`; the Responses item's done events.
    mutating func reasoningEndFrames(_ part: ReasoningPart) -> [Data] {
        switch job.endpoint {
        case .chatCompletions, .completions:
            return []
        case .messages:
            if let data = part.redactedData {
                var frames = closeItem()
                items.append(.reasoning(""))
                let block: JSONValue = ["type": "redacted_thinking", "data": .string(data)]
                frames.append(
                    Self.frame(["type": "content_block_start", "index": .int(items.count - 1), "content_block": block], event: "content_block_start"))
                frames.append(Self.frame(["type": "content_block_stop", "index": .int(items.count - 1)], event: "content_block_stop"))
                return frames
            }
            var frames = openReasoning()
            let signature = part.signature ?? ReasoningSignature.sign(part.text)
            frames.append(
                Self.frame(
                    ["type": "content_block_delta", "index": .int(items.count - 1), "delta": ["type": "signature_delta", "signature": .string(signature)]],
                    event: "content_block_delta"))
            frames += closeItem()
            return frames
        case .responses:
            var frames = openReasoning()
            let position = items.count - 1
            let itemID = reasoningItemID(position)
            let text: String
            if case .reasoning(let sofar) = items[position] { text = sofar } else { text = part.text }
            itemOpen = false
            frames.append(
                event(
                    "response.reasoning_text.done",
                    ["item_id": .string(itemID), "output_index": .int(position), "content_index": 0, "text": .string(text)]))
            if summarises {
                frames.append(
                    event(
                        "response.reasoning_summary_text.done",
                        ["item_id": .string(itemID), "output_index": .int(position), "summary_index": 0, "text": .string(text)]))
                frames.append(
                    event(
                        "response.reasoning_summary_part.done",
                        ["item_id": .string(itemID), "output_index": .int(position), "summary_index": 0, "part": summaryText(text)]))
            }
            frames.append(
                event("response.output_item.done", ["output_index": .int(position), "item": reasoningItem(text, id: itemID, part: part)]))
            return frames
        }
    }

    /// Opens a thinking block / reasoning item unless the last one is an open one.
    mutating func openReasoning() -> [Data] {
        if itemOpen, case .reasoning? = items.last { return [] }
        var frames = closeItem()
        items.append(.reasoning(""))
        itemOpen = true
        let position = items.count - 1
        switch job.endpoint {
        case .messages:
            frames.append(
                Self.frame(
                    ["type": "content_block_start", "index": .int(position), "content_block": ["type": "thinking", "thinking": "", "signature": ""]],
                    event: "content_block_start"))
        case .responses:
            let itemID = reasoningItemID(position)
            let item: JSONValue = ["id": .string(itemID), "type": "reasoning", "summary": [], "content": [], "status": "in_progress"]
            frames.append(event("response.output_item.added", ["output_index": .int(position), "item": item]))
            if summarises {
                frames.append(
                    event(
                        "response.reasoning_summary_part.added",
                        ["item_id": .string(itemID), "output_index": .int(position), "summary_index": 0, "part": summaryText("")]))
            }
        default: break
        }
        return frames
    }

    /// Adds text to the open reasoning item.
    mutating func appendReasoning(_ text: String) {
        guard let last = items.indices.last, case .reasoning(let sofar) = items[last] else { return }
        items[last] = .reasoning(sofar + text)
    }

    // MARK: Objects

    /// Whether the Responses request asked for a summary of the reasoning (`reasoning.summary`):
    /// the local model's summary is its whole reasoning text.
    var summarises: Bool { job.hints.reasoning.summary != nil }

    /// The Responses API's id of the reasoning item at `position`.
    func reasoningItemID(_ position: Int) -> String { "rs_\(id.dropFirst(5))_\(position)" }

    func summaryText(_ text: String) -> JSONValue { ["type": "summary_text", "text": .string(text)] }

    /// A Responses `reasoning` item: the text as `content` (`reasoning_text`), and as its
    /// `summary` when one was asked for; a cloud's encrypted content kept.
    func reasoningItem(_ text: String, id itemID: String, part: ReasoningPart?) -> JSONValue {
        var pairs: [(String, JSONValue)] = [
            ("id", .string(part?.id ?? itemID)), ("type", "reasoning"),
            ("summary", summarises ? [summaryText(text)] : []),
            ("content", [["type": "reasoning_text", "text": .string(text)]]),
        ]
        if let encrypted = part?.encryptedContent { pairs.append(("encrypted_content", .string(encrypted))) }
        pairs.append(("status", "completed"))
        return .object(pairs)
    }

    /// An Anthropic `thinking` block (or `redacted_thinking`).
    func thinkingBlock(_ part: ReasoningPart) -> JSONValue {
        if let data = part.redactedData { return ["type": "redacted_thinking", "data": .string(data)] }
        return ["type": "thinking", "thinking": .string(part.text), "signature": .string(part.signature ?? ReasoningSignature.sign(part.text))]
    }

    // MARK: Whole answers

    /// The whole answer with its reasoning: chat's `message.reasoning_content`, Anthropic's
    /// thinking blocks before the text, the Responses reasoning items before the message; and
    /// the reasoning tokens in the usage (chat `completion_tokens_details.reasoning_tokens`,
    /// Responses `output_tokens_details.reasoning_tokens`, Anthropic
    /// `output_tokens_details.thinking_tokens`).
    func withReasoning(_ body: JSONValue, parts: [ReasoningPart], choiceParts: [[ReasoningPart]] = [], usage: Usage) -> JSONValue {
        guard case .object(var pairs) = body else { return body }
        let tokens = usage.reasoningTokens ?? 0
        for index in pairs.indices {
            let (key, value) = pairs[index]
            switch (key, job.endpoint) {
            case ("choices", .chatCompletions):
                guard case .array(var choices) = value else { continue }
                for c in choices.indices {
                    let own = job.choices > 1 ? (c < choiceParts.count ? choiceParts[c] : []) : parts
                    guard !own.isEmpty else { continue }
                    let text = own.map(\.text).joined(separator: "\n\n")
                    choices[c] = Self.editing(choices[c], "message") { Self.inserting($0, ("reasoning_content", .string(text)), after: "content") }
                }
                pairs[index].1 = .array(choices)
            case ("content", .messages):
                guard case .array(let blocks) = value, !parts.isEmpty else { continue }
                pairs[index].1 = .array(parts.map(thinkingBlock) + blocks)
            case ("output", .responses):
                guard case .array(let items) = value, !parts.isEmpty else { continue }
                let reasoning = parts.enumerated().map { reasoningItem($1.text, id: reasoningItemID($0), part: $1) }
                pairs[index].1 = .array(reasoning + items)
            case ("usage", _) where tokens > 0:
                pairs[index].1 = Self.withReasoningTokens(value, tokens)
            default:
                break
            }
        }
        return .object(pairs)
    }

    /// A usage object with its reasoning count set (whichever of the APIs' fields it has).
    static func withReasoningTokens(_ usage: JSONValue, _ tokens: Int) -> JSONValue {
        var usage = usage
        for details in ["completion_tokens_details", "output_tokens_details"] {
            usage = editing(usage, details) { inner in
                guard case .object(var pairs) = inner else { return inner }
                for i in pairs.indices where pairs[i].0 == "reasoning_tokens" || pairs[i].0 == "thinking_tokens" { pairs[i].1 = .int(tokens) }
                return .object(pairs)
            }
        }
        return usage
    }

    /// `object` with member `key` replaced by `change(value)` (unchanged without it).
    static func editing(_ object: JSONValue, _ key: String, _ change: (JSONValue) -> JSONValue) -> JSONValue {
        guard case .object(var pairs) = object else { return object }
        for i in pairs.indices where pairs[i].0 == key { pairs[i].1 = change(pairs[i].1) }
        return .object(pairs)
    }

    /// `object` with `member` added after the member `key` (at the end without it).
    static func inserting(_ object: JSONValue, _ member: (String, JSONValue), after key: String) -> JSONValue {
        guard case .object(var pairs) = object else { return object }
        let at = pairs.firstIndex { $0.0 == key }.map { $0 + 1 } ?? pairs.count
        pairs.insert(member, at: at)
        return .object(pairs)
    }
}
