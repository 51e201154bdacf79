import Foundation
import HearthProviders

/// One Anthropic content block or Responses output item of a streamed answer.
enum StreamItem: Sendable {
    /// Text (the Responses API's message item), with the text so far.
    case text(String)
    /// The tool call of this index.
    case call(Int)
    /// Reasoning (an Anthropic thinking block, a Responses reasoning item), with the text so far.
    case reasoning(String)
}

/// Tool calls in each API's shape, whole and streamed, as the official clients reassemble them
/// (docs/TOOLS-server.md):
///
/// - Chat completions: `message.tool_calls[{id, type: "function", function: {name, arguments}}]`;
///   streamed as `delta.tool_calls[{index, id, type, function: {name, arguments: ""}}]` when a
///   call starts, then `delta.tool_calls[{index, function: {arguments}}]` per fragment.
/// - Anthropic Messages: `tool_use` content blocks `{id, name, input}`; streamed as
///   `content_block_start` (input `{}`), `input_json_delta` deltas, `content_block_stop`. Text
///   before a call is a block of its own, with its own index.
/// - Responses: `function_call` output items `{id, call_id, name, arguments, status}`; streamed
///   as `response.output_item.added`, `response.function_call_arguments.delta` /
///   `.done`, `response.output_item.done`.
extension ResponseRenderer {
    // MARK: Whole answers

    /// Chat completions' `tool_calls`.
    func chatToolCalls(_ calls: [ToolCall]) -> JSONValue {
        .array(calls.map { ["id": .string($0.id), "type": "function", "function": ["name": .string($0.name), "arguments": .string($0.arguments)]] })
    }

    /// An Anthropic `tool_use` block; `input` is the arguments as a JSON object (their key order
    /// kept); `caller` is `direct` (the model called it, not a server tool's code).
    func toolUseBlock(_ call: ToolCall) -> JSONValue {
        ["type": "tool_use", "id": .string(call.id), "name": .string(call.name), "input": Self.input(call.arguments), "caller": ["type": "direct"]]
    }

    /// A Responses `function_call` item.
    func functionCallItem(_ call: ToolCall, index: Int, status: String) -> JSONValue {
        [
            "type": "function_call", "id": .string(callItemID(index)), "call_id": .string(call.id), "name": .string(call.name),
            "arguments": .string(call.arguments), "status": .string(status),
        ]
    }

    /// A Responses `function_call` item's status: `completed`, or `incomplete` for a call the
    /// answer's end cut (max tokens) before its arguments were complete.
    static func status(of index: Int, in calls: ToolCallCollector) -> String {
        calls.finished.contains(index) ? "completed" : "incomplete"
    }

    /// A call's arguments as the JSON value Anthropic's `input` holds: the object (empty
    /// arguments are `{}`); text that is not JSON (a cloud model's broken call) as a string.
    static func input(_ arguments: String) -> JSONValue {
        if arguments.allSatisfy(\.isWhitespace) { return .object([]) }
        return (try? JSON.parse(arguments)) ?? .string(arguments)
    }

    /// A schema's JSON text as a value to echo, its key order kept (`{}` if it does not parse).
    static func schemaValue(_ text: String) -> JSONValue {
        (try? JSON.parse(text)) ?? [:]
    }

    /// The Responses object's `tools`, as the request gave them.
    var responsesTools: JSONValue {
        .array(
            job.options.tools.map { tool in
                let schema = Self.schemaValue(tool.parameters)
                return [
                    "type": "function", "name": .string(tool.name), "description": .optional(tool.description), "parameters": schema,
                    "strict": tool.strict.map { .bool($0) } ?? .null,
                ]
            })
    }

    /// The Responses object's `tool_choice`, as the request gave it.
    var responsesToolChoice: JSONValue {
        switch job.options.toolChoice {
        case .named(let name)?: return ["type": "function", "name": .string(name)]
        case let choice?: return .string(choice.description)
        case nil: return "auto"
        }
    }

    // MARK: Streaming

    /// The Responses API's id of the message item at `position` (the first is ``itemID``).
    func messageID(_ position: Int) -> String {
        items.prefix(position).contains { if case .text = $0 { return true } else { return false } } ? "\(itemID)_\(position)" : itemID
    }

    /// The Responses API's id of the `function_call` item of call `index`.
    func callItemID(_ index: Int) -> String { "fc_\(id.dropFirst(5))_\(index)" }

    /// Opens a text block / message item unless the last one is an open one (closing what is open).
    mutating func openText() -> [Data] {
        if itemOpen, case .text? = items.last { return [] }
        var frames = closeItem()
        items.append(.text(""))
        itemOpen = true
        let position = items.count - 1
        switch job.endpoint {
        case .messages:
            frames.append(
                Self.frame(
                    ["type": "content_block_start", "index": .int(position), "content_block": ["type": "text", "text": ""]],
                    event: "content_block_start"))
        case .responses:
            let itemID = messageID(position)
            frames.append(event("response.output_item.added", ["output_index": .int(position), "item": outputItem(text: nil, id: itemID)]))
            frames.append(
                event(
                    "response.content_part.added",
                    ["item_id": .string(itemID), "output_index": .int(position), "content_index": 0, "part": outputText("")]))
        default: break
        }
        return frames
    }

    /// Adds text to the open text item.
    mutating func appendText(_ text: String) {
        guard let last = items.indices.last, case .text(let sofar) = items[last] else { return }
        items[last] = .text(sofar + text)
    }

    /// Closes the open block / item: `content_block_stop`, or the Responses API's done events.
    mutating func closeItem() -> [Data] {
        guard itemOpen, let last = items.last else { return [] }
        itemOpen = false
        let position = items.count - 1
        switch (job.endpoint, last) {
        case (.messages, _):
            return [Self.frame(["type": "content_block_stop", "index": .int(position)], event: "content_block_stop")]
        case (.responses, .text(let text)):
            let itemID = messageID(position)
            // Tokens listed after the last delta, and the one the text ends within, still belong to this item.
            if job.logprobs != nil { pendingLogprobs += aligner.finish() }
            itemLogprobs[position, default: []] += logprobEntries(pendingLogprobs)
            pendingLogprobs = []
            let logprobs = itemLogprobs[position] ?? []
            return [
                event(
                    "response.output_text.done",
                    [
                        "item_id": .string(itemID), "output_index": .int(position), "content_index": 0, "text": .string(text),
                        "logprobs": .array(logprobs),
                    ]),
                event(
                    "response.content_part.done",
                    ["item_id": .string(itemID), "output_index": .int(position), "content_index": 0, "part": outputText(text, logprobs: logprobs)]),
                event("response.output_item.done", ["output_index": .int(position), "item": outputItem(text: text, id: itemID, logprobs: logprobs)]),
            ]
        case (.responses, .call(let index)):
            guard calls.calls.indices.contains(index) else { return [] }
            let call = calls.calls[index]
            return [
                event(
                    "response.function_call_arguments.done",
                    [
                        "item_id": .string(callItemID(index)), "output_index": .int(position), "name": .string(call.name),
                        "arguments": .string(call.arguments),
                    ]),
                event("response.output_item.done", ["output_index": .int(position), "item": functionCallItem(call, index: index, status: Self.status(of: index, in: calls))]),
            ]
        default:
            return []
        }
    }

    /// The frames of one step of a tool call.
    mutating func toolFrames(_ step: ToolCallEvent) -> [Data] {
        calls.add(step)
        switch job.endpoint {
        case .chatCompletions where job.legacyFunctions:
            // The deprecated function calling: one call, `delta.function_call`.
            switch step {
            case .started(0, _, let name):
                return [chatChunk(delta: ["function_call": ["name": .string(name), "arguments": ""]], logprobs: nil, finish: nil)]
            case .arguments(0, let fragment) where !fragment.isEmpty:
                return [chatChunk(delta: ["function_call": ["arguments": .string(fragment)]], logprobs: nil, finish: nil)]
            default:
                return []
            }
        case .chatCompletions:
            switch step {
            case .started(let index, let id, let name):
                let call: JSONValue = [
                    "index": .int(index), "id": .string(id), "type": "function", "function": ["name": .string(name), "arguments": ""],
                ]
                return [chatChunk(delta: ["tool_calls": [call]], logprobs: nil, finish: nil)]
            case .arguments(let index, let fragment):
                guard !fragment.isEmpty else { return [] }
                return [chatChunk(delta: ["tool_calls": [["index": .int(index), "function": ["arguments": .string(fragment)]]]], logprobs: nil, finish: nil)]
            case .finished:
                return []
            }
        case .messages, .responses:
            switch step {
            case .started(let index, let id, let name):
                var frames = closeItem()
                items.append(.call(index))
                itemOpen = true
                let position = items.count - 1
                if job.endpoint == .messages {
                    let block: JSONValue = ["type": "tool_use", "id": .string(id), "name": .string(name), "input": [:], "caller": ["type": "direct"]]
                    frames.append(
                        Self.frame(["type": "content_block_start", "index": .int(position), "content_block": block], event: "content_block_start"))
                } else {
                    let item = functionCallItem(ToolCall(id: id, name: name, arguments: ""), index: index, status: "in_progress")
                    frames.append(event("response.output_item.added", ["output_index": .int(position), "item": item]))
                }
                return frames
            case .arguments(let index, let fragment):
                guard !fragment.isEmpty, let position = position(ofCall: index) else { return [] }
                if job.endpoint == .messages {
                    return [
                        Self.frame(
                            ["type": "content_block_delta", "index": .int(position), "delta": ["type": "input_json_delta", "partial_json": .string(fragment)]],
                            event: "content_block_delta")
                    ]
                }
                return [
                    event(
                        "response.function_call_arguments.delta",
                        ["item_id": .string(callItemID(index)), "output_index": .int(position), "delta": .string(fragment)])
                ]
            case .finished(let index):
                guard let position = position(ofCall: index), position == items.count - 1 else { return [] }
                return closeItem()
            }
        case .completions:
            return []
        }
    }

    /// Where call `index` is among the streamed items.
    func position(ofCall index: Int) -> Int? {
        items.firstIndex { if case .call(index) = $0 { return true } else { return false } }
    }

    /// The Responses API's `output` of the streamed answer (every item done).
    func streamedOutput() -> [JSONValue] {
        items.enumerated().compactMap { position, item in
            switch item {
            case .text(let text): return outputItem(text: text, id: messageID(position), logprobs: itemLogprobs[position] ?? [])
            case .call(let index):
                guard calls.calls.indices.contains(index) else { return nil }
                return functionCallItem(calls.calls[index], index: index, status: Self.status(of: index, in: calls))
            case .reasoning(let text): return reasoningItem(text, id: reasoningItemID(position), part: nil)
            }
        }
    }
}
