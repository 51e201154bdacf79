/// A variable name, interned when the template is compiled: frames compare small integer ids,
/// not strings. One template's ids come from its own `NameTable`.
struct Name {
    let id: Int
    let text: String
    /// Whether the name is a global function (`range`, `namespace`, …), called when no variable
    /// shadows it.
    let isGlobal: Bool

    init(id: Int, text: String) {
        self.id = id
        self.text = text
        self.isGlobal = Builtins.globals.contains(text)
    }
}

/// The variable names one template uses, each with an id (dense, from 0). `loop`, `caller`,
/// `varargs` and `kwargs`, which the evaluator binds itself, have fixed ids.
struct NameTable {
    private(set) var ids: [String: Int] = [:]

    static let loop = Name(id: 0, text: "loop")
    static let caller = Name(id: 1, text: "caller")
    static let varargs = Name(id: 2, text: "varargs")
    static let kwargs = Name(id: 3, text: "kwargs")

    init() {
        for name in [Self.loop, Self.caller, Self.varargs, Self.kwargs] { ids[name.text] = name.id }
    }

    /// The name's id, assigning the next one to a name not seen before.
    mutating func intern(_ text: String) -> Name {
        if let id = ids[text] { return Name(id: id, text: text) }
        let id = ids.count
        ids[text] = id
        return Name(id: id, text: text)
    }
}

/// Expressions of the template language (jinja2's `nodes.Expr` subset).
indirect enum Expr {
    case literal(JinjaValue)
    case name(Name, SourcePosition)
    case list([Expr])
    case tuple([Expr])
    case dict([(Expr, Expr)])
    case attribute(Expr, String, SourcePosition)
    case item(Expr, Expr, SourcePosition)
    case slice(Expr, Expr?, Expr?, Expr?, SourcePosition)
    case call(Expr, Arguments, SourcePosition)
    case filter(Expr, String, Arguments, SourcePosition)
    case test(Expr, String, Arguments, negated: Bool, SourcePosition)
    case unary(String, Expr, SourcePosition)
    case binary(String, Expr, Expr, SourcePosition)
    case concat([Expr], SourcePosition)
    case compare(Expr, [(CompareOperator, Expr)], SourcePosition)
    case and(Expr, Expr)
    case or(Expr, Expr)
    case not(Expr)
    case conditional(test: Expr, then: Expr, otherwise: Expr?)
}

/// A comparison operator, resolved when the template is compiled (the raw value is its spelling;
/// `not in` is `notin`).
enum CompareOperator: String {
    case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
    case contains = "in", notContains = "notin"
}

/// Call arguments: positional, then keyword.
struct Arguments {
    var positional: [Expr] = []
    var keyword: [(String, Expr)] = []
}

/// Where a `set` or `for` stores: a name, `ns.attr`, or a tuple of names.
enum AssignTarget {
    case name(Name)
    case attribute(Name, String)
    case tuple([AssignTarget])
}

/// A macro (or a `call` block's body, which is an anonymous macro named `caller`).
final class MacroDefinition {
    let name: Name
    let parameters: [(Name, Expr?)]
    let body: [Node]
    let position: SourcePosition
    init(name: Name, parameters: [(Name, Expr?)], body: [Node], position: SourcePosition) {
        self.name = name
        self.parameters = parameters
        self.body = body
        self.position = position
    }
}

/// Statements (jinja2's `nodes.Stmt` subset).
indirect enum Node {
    case text(String)
    case output(Expr, SourcePosition)
    case ifChain([(Expr, [Node])], otherwise: [Node])
    case forLoop(target: AssignTarget, iterable: Expr, condition: Expr?, body: [Node], otherwise: [Node], SourcePosition)
    case set(AssignTarget, Expr, SourcePosition)
    case setBlock(AssignTarget, filters: [(String, Arguments, SourcePosition)], body: [Node], SourcePosition)
    case macro(MacroDefinition)
    case callBlock(call: Expr, caller: MacroDefinition, SourcePosition)
    case filterBlock(filters: [(String, Arguments, SourcePosition)], body: [Node], SourcePosition)
    case with(assignments: [(AssignTarget, Expr)], body: [Node])
    case loopBreak(SourcePosition)
    case loopContinue(SourcePosition)
    case generation([Node])
}
