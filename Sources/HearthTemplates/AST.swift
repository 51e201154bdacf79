/// Expressions of the template language (jinja2's `nodes.Expr` subset).
indirect enum Expr {
    case literal(JinjaValue)
    case name(String, SourcePosition)
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
    case compare(Expr, [(String, Expr)], SourcePosition)
    case and(Expr, Expr)
    case or(Expr, Expr)
    case not(Expr)
    case conditional(test: Expr, then: Expr, otherwise: Expr?)
}

/// Call arguments: positional, then keyword.
struct Arguments {
    var positional: [Expr] = []
    var keyword: [(String, Expr)] = []
}

/// Where a `set` or `for` stores: a name, `ns.attr`, or a tuple of names.
enum AssignTarget {
    case name(String)
    case attribute(String, String)
    case tuple([AssignTarget])
}

/// A macro (or a `call` block's body, which is an anonymous macro named `caller`).
final class MacroDefinition {
    let name: String
    let parameters: [(String, Expr?)]
    let body: [Node]
    let position: SourcePosition
    init(name: String, parameters: [(String, Expr?)], body: [Node], position: SourcePosition) {
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
