import HearthProviders

/// Turns a local model's reply, generated under a ``ToolFormat`` grammar, into text and tool-call
/// events as it streams: text passes through (its leading white space dropped) once it can no
/// longer be the start of a call; a call's name becomes ``ToolCallEvent/started(index:id:name:)``
/// as soon as it is complete, its arguments stream as fragments, and its end is
/// ``ToolCallEvent/finished(index:)``. Nothing of a call's syntax ever reaches the text.
///
/// A call that repeats an earlier call of the same reply exactly (small models loop on their
/// last call) is dropped and ends the reply (``repeatedCall``): while a call's text is still a
/// prefix of an earlier call's its events are held back, and released the moment it differs.
struct ToolCallScanner {
    /// What the reply yields.
    enum Output: Equatable {
        case text(String)
        case call(ToolCallEvent)
    }

    private enum State {
        /// The reply so far (white space, or a prefix of the call trigger): text or a call?
        case lead(String)
        /// A text reply: everything passes through.
        case text
        /// Fixed syntax still to come, then `next`.
        case literal(Substring, next: Next)
        /// A call's name, so far.
        case name(String)
        /// A call's arguments: nesting depth and string state.
        case arguments(depth: Int, inString: Bool, escaped: Bool)
        /// After a call: the separator to the next one, or the end.
        case between(String)
        case done
    }

    private enum Next { case name, arguments, between }

    let format: ToolFormat
    private var state = State.lead("")
    private var index = 0
    private var open = false
    private let newID: () -> String
    /// Whether any call started.
    private(set) var madeCalls = false
    /// Set when a call repeated an earlier one exactly: the caller should stop generating.
    private(set) var repeatedCall = false
    /// The text (name and arguments) of each call so far, and of the current one.
    private var callTexts: [String] = []
    private var current = ""
    /// Events of the current call held back while it may be a repeat.
    private var held: [Output] = []
    private var holding = false

    init(format: ToolFormat, newID: @escaping () -> String = ToolCall.newID) {
        self.format = format
        self.newID = newID
    }

    // Long: one state machine over the reply's characters (text, a possible start tag, inside a call,
    // after it); its states share the pending text and fragment buffers, and splitting it would move
    // that state into a type only it uses.
    /// Feeds the next piece of the reply.
    mutating func feed(_ piece: String) -> [Output] {
        var out: [Output] = []
        var text = ""
        var fragment = ""
        func flushText() {
            if !text.isEmpty { out.append(.text(text)); text = "" }
        }
        func flushFragment() {
            if !fragment.isEmpty { emit(.arguments(index: index, fragment: fragment), into: &out); fragment = "" }
        }
        for character in piece {
            if case .name = state { current.append(character) }
            if case .arguments = state { current.append(character) }
            if holding && !callTexts.contains(where: { $0.hasPrefix(current) }) {
                // It differs from every earlier call: release what was held and go on live.
                flushFragment()
                holding = false
                out += held
                held = []
            }
            switch state {
            case .done:
                continue
            case .text:
                text.append(character)
            case .lead(var pending):
                pending.append(character)
                let trimmed = String(pending.drop { $0.isWhitespace })
                let trigger = format.trigger
                if trimmed.isEmpty || (trigger.hasPrefix(trimmed) && trimmed.count < trigger.count) {
                    state = .lead(pending)
                } else if trimmed == trigger {
                    state = .literal(format.callPrefix.dropFirst(trigger.count), next: .name)
                    if format.callPrefix.count == trigger.count { state = .name("") }
                } else {
                    text += trimmed
                    state = .text
                }
            case .literal(let rest, let next):
                let remaining = rest.dropFirst()  // the grammar fixed these characters
                if !remaining.isEmpty {
                    state = .literal(remaining, next: next)
                } else {
                    switch next {
                    case .name: state = .name("")
                    case .arguments: state = .arguments(depth: 0, inString: false, escaped: false)
                    case .between: state = .between("")
                    }
                }
            case .name(var name):
                if character == "\"" {
                    holding = callTexts.contains { $0.hasPrefix(current) }
                    emit(.started(index: index, id: newID(), name: name), into: &out)
                    open = true
                    madeCalls = true
                    state = .literal(#", ""# + format.argumentsKey + #"": "#, next: .arguments)
                } else {
                    name.append(character)
                    state = .name(name)
                }
            case .arguments(var depth, var inString, var escaped):
                fragment.append(character)
                if inString {
                    if escaped {
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        inString = false
                    }
                } else if character == "\"" {
                    inString = true
                } else if character == "{" || character == "[" {
                    depth += 1
                } else if character == "}" || character == "]" {
                    depth -= 1
                }
                if depth == 0 && !inString && (character == "}" || character == "]") {
                    open = false
                    if holding && callTexts.contains(current) {
                        // An exact repeat: dropped, and the reply ends here.
                        fragment = ""
                        held = []
                        holding = false
                        repeatedCall = true
                        state = .done
                        continue
                    }
                    flushFragment()
                    emit(.finished(index: index), into: &out)
                    callTexts.append(current)
                    current = ""
                    index += 1
                    state = .literal(Substring("}" + format.callClose), next: .between)
                } else {
                    state = .arguments(depth: depth, inString: inString, escaped: escaped)
                }
            case .between(var pending):
                pending.append(character)
                let next = format.separator + format.callOpen + #"{"name": ""#
                if pending == next {
                    state = .name("")
                    current = ""
                } else if next.hasPrefix(pending) {
                    state = .between(pending)
                } else {
                    state = .done  // the list's end (the grammar allows nothing else)
                }
            }
        }
        flushText()
        flushFragment()
        return out
    }

    /// The reply ended: text held back while it could still have been a call is released; a
    /// call cut short (by the token limit) is closed — unless it was being held as a possible
    /// repeat, which is dropped.
    mutating func finish() -> [Output] {
        defer { state = .done }
        switch state {
        case .lead(let pending):
            let trimmed = String(pending.drop { $0.isWhitespace })
            return trimmed.isEmpty ? [] : [.text(trimmed)]
        default:
            guard open else { return [] }
            open = false
            if holding {
                held = []
                holding = false
                return []
            }
            return [.call(.finished(index: index))]
        }
    }

    /// Sends a call event out, or holds it while the call may be a repeat.
    private mutating func emit(_ event: ToolCallEvent, into out: inout [Output]) {
        if holding { held.append(.call(event)) } else { out.append(.call(event)) }
    }
}
