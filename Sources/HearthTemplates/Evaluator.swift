import Foundation

/// A frame's variables by interned name id (`NameTable`): a few ids, searched linearly (a frame
/// rarely holds more than a few dozen), with a hash index past 32.
struct VariableTable {
    /// (id, value) pairs in one buffer: a frame costs one allocation.
    private var entries: [(id: Int, value: JinjaValue)] = []
    private var index: [Int: Int]? = nil
    /// For the template's top frame, which most lookups reach: a slot per name id instead.
    private var slots: [JinjaValue?]? = nil

    init() {}

    /// A table with a slot for each of `count` ids (the template's `NameTable`).
    init(slots count: Int) { slots = [JinjaValue?](repeating: nil, count: count) }

    private func position(_ id: Int) -> Int? {
        if let index { return index[id] }
        return entries.withUnsafeBufferPointer { buffer in
            for i in 0..<buffer.count where buffer[i].id == id { return i }
            return nil
        }
    }

    subscript(id: Int) -> JinjaValue? {
        get {
            if let slots { return id < slots.count ? slots[id] : nil }
            return position(id).map { entries[$0].value }
        }
        set {
            guard let newValue else { return }  // templates never unset a variable
            if let count = slots?.count, id < count {
                slots?[id] = newValue  // in place: optional chaining does not copy the array
                return
            }
            if let i = position(id) {
                entries[i].value = newValue
                return
            }
            if entries.isEmpty { entries.reserveCapacity(4) }
            entries.append((id, newValue))
            if index != nil {
                index?[id] = entries.count - 1
            } else if entries.count > 32 {
                var built: [Int: Int] = [:]
                for (i, entry) in entries.enumerated() { built[entry.id] = i }
                index = built
            }
        }
    }
}

/// Variables visible at one point of a render: a chain of frames (template, `for` body, macro call).
final class Scope {
    // Unchecked: a render runs on one thread, and no access to a frame's table overlaps another
    // (the evaluator reads or writes one variable at a time, never during a call).
    @exclusivity(unchecked) var variables = VariableTable()
    let parent: Scope?

    init(parent: Scope?) {
        self.parent = parent
    }

    /// The template's top frame: the caller's variables under the template's name ids (a
    /// variable the template never names cannot be read, so it is left out).
    init(_ context: [String: JinjaValue], names: NameTable) {
        self.parent = nil
        variables = VariableTable(slots: names.ids.count)
        for (key, value) in context {
            if let id = names.ids[key] { variables[id] = value }
        }
    }

    func lookup(_ id: Int) -> JinjaValue? {
        // Recursive rather than a loop over a `Scope?` variable: reading the `let parent` of a
        // borrowed frame needs no retain. The depth is the frame chain's (bounded by nesting
        // and `maxCallDepth`).
        if let v = variables[id] { return v }
        return parent?.lookup(id)
    }
}

/// Control flow out of a statement list.
enum Flow {
    case normal, breakLoop, continueLoop
}

/// Runs a parsed template: one instance per render, holding the output buffers and the budget.
final class Evaluator {
    let limits: TemplateLimits
    let now: Date
    let timeZone: TimeZone
    // Unchecked: one render, one thread; no access to these overlaps another (each is read and
    // written in one statement, never across a call).
    @exclusivity(unchecked) var steps = 0
    @exclusivity(unchecked) var callDepth = 0
    /// Output buffers: the template's, and one per macro call or block capture in progress.
    @exclusivity(unchecked) var buffers: [String] = [""]

    init(limits: TemplateLimits, now: Date, timeZone: TimeZone) {
        self.limits = limits
        self.now = now
        self.timeZone = timeZone
    }

    // MARK: budget

    @inline(__always) func tick(_ position: SourcePosition?, _ n: Int = 1) throws {
        steps += n
        if steps > limits.maxSteps {
            throw TemplateError(.limit, "rendering took more than \(limits.maxSteps) steps", at: position)
        }
    }

    func write(_ s: String, _ position: SourcePosition?) throws {
        let last = buffers.count - 1
        buffers[last] += s
        if buffers[last].utf8.count > limits.maxOutputBytes {
            throw TemplateError(.limit, "output is longer than \(limits.maxOutputBytes) bytes", at: position)
        }
    }

    func checkString(_ s: String, _ position: SourcePosition?) throws -> JinjaValue {
        if s.utf8.count > limits.maxOutputBytes {
            throw TemplateError(.limit, "a string is longer than \(limits.maxOutputBytes) bytes", at: position)
        }
        return .string(s)
    }

    func checkList(_ count: Int, _ position: SourcePosition?) throws {
        if count > limits.maxListLength {
            throw TemplateError(.limit, "a list has more than \(limits.maxListLength) items", at: position)
        }
    }

    /// Python `str()` of a value, with the depth bound and budget enforced.
    func str(_ value: JinjaValue, _ position: SourcePosition?) throws -> String {
        switch value {
        case .string(let s): return s
        case .undefined: return ""
        case .none, .bool, .int, .float: return PythonFormat.str(value)
        default:
            try checkDepth(value, position)
            let s = PythonFormat.repr(value, depth: 0, limit: limits.maxValueDepth)
            try tick(position, s.utf8.count / 16)
            return s
        }
    }

    /// Refuses values nested deeper than `maxValueDepth` (and charges the budget per item).
    func checkDepth(_ value: JinjaValue, _ position: SourcePosition?) throws {
        var stack: [(JinjaValue, Int)] = [(value, 0)]
        while let (v, d) = stack.popLast() {
            try tick(position)
            if d > limits.maxValueDepth {
                throw TemplateError(.limit, "a value nests deeper than \(limits.maxValueDepth) levels", at: position)
            }
            switch v {
            case .list(let a), .tuple(let a): for x in a { stack.append((x, d + 1)) }
            case .dict(let dict): for x in dict.values { stack.append((x, d + 1)) }
            default: break
            }
        }
    }

    /// Refuses a container nested deeper than `maxValueDepth`, visiting containers only: a
    /// variable re-wrapped in a loop (`{% set x = [x] %}`) must not grow without bound (Swift
    /// would recurse that deep to print or even free it).
    func checkContainerDepth(_ value: JinjaValue, _ position: SourcePosition?) throws {
        // Most containers (a message, a list of strings) hold no container: depth 1 at most.
        if limits.maxValueDepth >= 1, !Self.holdsContainer(value) { return }
        var stack: [(JinjaValue, Int)] = [(value, 0)]
        while let (v, d) = stack.popLast() {
            if d > limits.maxValueDepth {
                throw TemplateError(.limit, "a value nests deeper than \(limits.maxValueDepth) levels", at: position)
            }
            switch v {
            case .list(let a), .tuple(let a):
                for x in a { if case .list = x { stack.append((x, d + 1)) } else if case .tuple = x { stack.append((x, d + 1)) } else if case .dict = x { stack.append((x, d + 1)) } }
            case .dict(let dict):
                for x in dict.values { if case .list = x { stack.append((x, d + 1)) } else if case .tuple = x { stack.append((x, d + 1)) } else if case .dict = x { stack.append((x, d + 1)) } }
            default: break
            }
        }
    }

    /// Whether a list, tuple or dict has a list, tuple or dict among its items.
    static func holdsContainer(_ value: JinjaValue) -> Bool {
        func isContainer(_ x: JinjaValue) -> Bool {
            switch x {
            case .list, .tuple, .dict: return true
            default: return false
            }
        }
        switch value {
        case .list(let a), .tuple(let a): return a.contains(where: isContainer)
        case .dict(let d): return d.values.contains(where: isContainer)
        default: return false
        }
    }

    // MARK: statements

    func run(_ nodes: [Node], _ scope: Scope) throws -> Flow {
        for i in nodes.indices {
            let flow = try exec(nodes[i], scope)
            if flow != .normal { return flow }
        }
        return .normal
    }

    func exec(_ node: Node, _ scope: Scope) throws -> Flow {
        switch node {
        case .text(let s):
            try write(s, nil)
        case .output(let expr, let position):
            let value = try eval(expr, scope)
            try write(try str(value, position), position)
        case .ifChain(let branches, let otherwise):
            for i in branches.indices where try eval(branches[i].0, scope).isTruthy {
                return try run(branches[i].1, scope)
            }
            return try run(otherwise, scope)
        case .forLoop(let target, let iterable, let condition, let body, let otherwise, let position):
            return try execFor(target, iterable, condition, body, otherwise, position, scope)
        case .set(let target, let expr, let position):
            try assign(target, try eval(expr, scope), scope, position)
        case .setBlock(let target, let filters, let body, let position):
            var value = JinjaValue.string(try capture(body, scope))
            for (name, arguments, fposition) in filters {
                value = try applyFilter(name, value, arguments, scope, fposition)
            }
            try assign(target, value, scope, position)
        case .macro(let definition):
            scope.variables[definition.name.id] = .object(CallableObject(.macro(definition, scope)))
        case .callBlock(let callExpr, let caller, _):
            guard case .call(let callee, let arguments, let cposition) = callExpr else { return .normal }
            let function = try eval(callee, scope)
            let callerValue = JinjaValue.object(CallableObject(.caller(caller, scope)))
            var positional = try arguments.positional.map { try eval($0, scope) }
            var keyword = try arguments.keyword.map { ($0.0, try eval($0.1, scope)) }
            keyword.append(("caller", callerValue))
            let result = try self.call(function, &positional, keyword, cposition)
            try write(try str(result, cposition), cposition)
        case .filterBlock(let filters, let body, let position):
            var value = JinjaValue.string(try capture(body, scope))
            for (name, arguments, fposition) in filters {
                value = try applyFilter(name, value, arguments, scope, fposition)
            }
            try write(try str(value, position), position)
        case .with(let assignments, let body):
            let inner = Scope(parent: scope)
            for (target, expr) in assignments { try assign(target, try eval(expr, scope), inner, nil) }
            return try run(body, inner)
        case .loopBreak(let position):
            try tick(position)
            return .breakLoop
        case .loopContinue(let position):
            try tick(position)
            return .continueLoop
        case .generation(let body):
            return try run(body, scope)
        }
        return .normal
    }

    /// Renders `body` into a string (block `set`, `filter`, macro bodies).
    func capture(_ body: [Node], _ scope: Scope) throws -> String {
        buffers.append("")
        defer { buffers.removeLast() }
        _ = try run(body, scope)
        return buffers[buffers.count - 1]
    }

    func assign(_ target: AssignTarget, _ value: JinjaValue, _ scope: Scope, _ position: SourcePosition?) throws {
        switch value {
        case .list, .tuple, .dict: try checkContainerDepth(value, position)
        default: break
        }
        switch target {
        case .name(let n):
            scope.variables[n.id] = value
        case .attribute(let n, let attribute):
            guard case .object(let object) = scope.lookup(n.id) ?? .undefined(n.text), let ns = object as? NamespaceObject else {
                throw TemplateError(.type, "cannot assign attribute on non-namespace object '\(n.text)'", at: position)
            }
            if attribute.hasPrefix("_") {
                throw TemplateError(.security, "chat templates cannot store underscore-prefixed attributes on a namespace ('\(attribute)')", at: position)
            }
            ns.attributes[.string(attribute)] = value
        case .tuple(let targets):
            let items: [JinjaValue]
            switch value {
            case .list(let a), .tuple(let a): items = a
            case .string(let s): items = s.unicodeScalars.map { .string(String($0)) }
            case .dict(let d): items = d.keys
            default: throw TemplateError(.type, "cannot unpack non-iterable \(value.typeName) object", at: position)
            }
            guard items.count == targets.count else {
                throw TemplateError(
                    .type, items.count > targets.count ? "too many values to unpack (expected \(targets.count))" : "not enough values to unpack (expected \(targets.count), got \(items.count))",
                    at: position)
            }
            for (t, v) in zip(targets, items) { try assign(t, v, scope, position) }
        }
    }

    /// The items a `for` (or a filter) iterates: list items, string characters, dict keys.
    func iterate(_ value: JinjaValue, _ position: SourcePosition?) throws -> [JinjaValue] {
        switch value {
        case .list(let a), .tuple(let a): return a
        case .dict(let d): return d.keys
        case .string(let s): return s.unicodeScalars.map { .string(String($0)) }
        case .undefined: return []
        case .object(let o):
            if let loop = o as? LoopObject { return loop.items }
            if let generator = o as? GeneratorObject { return generator.items }
            throw TemplateError(.type, "'\(o.typeName)' object is not iterable", at: position)
        default:
            throw TemplateError(.type, "'\(value.typeName)' object is not iterable", at: position)
        }
    }

    private func execFor(
        _ target: AssignTarget, _ iterable: Expr, _ condition: Expr?, _ body: [Node], _ otherwise: [Node],
        _ position: SourcePosition, _ scope: Scope
    ) throws -> Flow {
        var items = try iterate(try eval(iterable, scope), position)
        let inner = Scope(parent: scope)
        if let condition {
            var kept: [JinjaValue] = []
            for item in items {
                try tick(position)
                try assign(target, item, inner, position)
                if try eval(condition, inner).isTruthy { kept.append(item) }
            }
            items = kept
        }
        if items.isEmpty { return try run(otherwise, scope) }
        let loop = LoopObject()
        loop.items = items
        if case .object(let o) = scope.lookup(NameTable.loop.id) ?? JinjaValue.none, let outer = o as? LoopObject { loop.depth0 = outer.depth0 + 1 }
        inner.variables[NameTable.loop.id] = .object(loop)
        if case .name(let name) = target {
            // One name (`for message in messages`): store each item under its id directly;
            // containers still get `assign`'s depth check.
            let id = name.id
            for i in items.indices {
                try tick(position)
                loop.index0 = i
                switch items[i] {
                case .list, .tuple, .dict: try checkContainerDepth(items[i], position)
                default: break
                }
                inner.variables[id] = items[i]
                if try run(body, inner) == .breakLoop { break }
            }
            return .normal
        }
        for (i, item) in items.enumerated() {
            try tick(position)
            loop.index0 = i
            try assign(target, item, inner, position)
            if try run(body, inner) == .breakLoop { break }
        }
        return .normal
    }
}
