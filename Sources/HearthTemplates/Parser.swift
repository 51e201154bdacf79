/// A recursive-descent parser with jinja2's grammar and precedence (`jinja2/parser.py` is the
/// reference: `parse_condexpr` down to `parse_unary`, postfix, filters and tests). Nesting is
/// bounded by `TemplateLimits.maxNesting`, so the recursion depth comes from the limit, not the input.
struct Parser {
    private let tokens: [Token]
    private var index = 0
    private var depth = 0
    private let maxDepth: Int
    private var loopDepth = 0
    /// Inside an `if` or a conditional expression (jinja2's "soft" frame), an unknown filter or
    /// test is an error only when it runs, as jinja2 raises it; elsewhere at compile time.
    private var softDepth = 0
    /// The variable names seen so far, interned.
    private(set) var names = NameTable()

    static func parse(_ source: String, limits: TemplateLimits) throws -> (nodes: [Node], names: NameTable) {
        var parser = Parser(tokens: try Lexer.tokenize(source), maxDepth: limits.maxNesting)
        let (nodes, endTag) = try parser.parseBody(until: [])
        if let endTag { throw TemplateError(.syntax, "unexpected '\(endTag)'", at: parser.tokens[parser.index].position) }
        return (nodes, parser.names)
    }

    private init(tokens: [Token], maxDepth: Int) {
        self.tokens = tokens
        self.maxDepth = maxDepth
    }

    // MARK: token helpers

    private var current: Token { tokens[min(index, tokens.count - 1)] }
    private var nextToken: Token { tokens[min(index + 1, tokens.count - 1)] }

    private mutating func advance() { if index < tokens.count - 1 { index += 1 } }

    private func isOp(_ op: String) -> Bool {
        if case .op(let o) = current.kind { return o == op }
        return false
    }

    private func isName(_ name: String) -> Bool {
        if case .name(let n) = current.kind { return n == name }
        return false
    }

    private mutating func skipOp(_ op: String) -> Bool {
        if isOp(op) { advance(); return true }
        return false
    }

    private mutating func skipName(_ name: String) -> Bool {
        if isName(name) { advance(); return true }
        return false
    }

    private func fail(_ message: String) -> TemplateError {
        TemplateError(.syntax, message, at: current.position)
    }

    private func describe(_ kind: Token.Kind) -> String {
        switch kind {
        case .text: return "template data"
        case .blockBegin: return "'{%'"
        case .blockEnd: return "end of statement block"
        case .variableBegin: return "'{{'"
        case .variableEnd: return "end of print statement"
        case .name(let n): return "'\(n)'"
        case .string: return "string"
        case .integer, .float: return "number"
        case .op(let o): return "'\(o)'"
        case .end: return "end of template"
        }
    }

    private mutating func expectOp(_ op: String) throws {
        guard skipOp(op) else { throw fail("expected '\(op)', got \(describe(current.kind))") }
    }

    private mutating func expectName() throws -> String {
        guard case .name(let n) = current.kind else { throw fail("expected a name, got \(describe(current.kind))") }
        advance()
        return n
    }

    private mutating func expectBlockEnd() throws {
        guard current.kind == .blockEnd else { throw fail("expected end of statement block, got \(describe(current.kind))") }
        advance()
    }

    private mutating func enter() throws {
        depth += 1
        if depth > maxDepth {
            throw TemplateError(.limit, "template nests deeper than \(maxDepth) levels", at: current.position)
        }
    }

    private mutating func leave() { depth -= 1 }

    /// Counts one more level of a left-deep chain (`a + b + c`, `x.a.b`, `x|f|g`), whose tree is
    /// as deep as the chain is long although the parser loops: `wraps` levels are released by
    /// the caller with `depth -= wraps`.
    private mutating func wrap(_ wraps: inout Int) throws {
        wraps += 1
        try enter()
    }

    // MARK: statements

    /// Parses nodes until a block tag whose name is in `endTags` (returned, with the cursor on
    /// that name) or the end of the template (returns nil).
    private mutating func parseBody(until endTags: Set<String>) throws -> ([Node], String?) {
        try enter()
        defer { leave() }
        var nodes: [Node] = []
        while true {
            let token = current
            switch token.kind {
            case .end:
                return (nodes, nil)
            case .text(let s):
                nodes.append(.text(s))
                advance()
            case .variableBegin:
                advance()
                let expr = try parseTuple()
                guard current.kind == .variableEnd else { throw fail("expected end of print statement, got \(describe(current.kind))") }
                advance()
                nodes.append(.output(expr, token.position))
            case .blockBegin:
                advance()
                guard case .name(let keyword) = current.kind else { throw fail("tag name expected") }
                if endTags.contains(keyword) { return (nodes, keyword) }
                nodes.append(try parseStatement(keyword, at: current.position))
            default:
                throw fail("unexpected \(describe(token.kind))")
            }
        }
    }

    /// Parses a body that must end with one of `endTags`; consumes the end tag's name.
    private mutating func parseRequiredBody(_ endTags: Set<String>, for statement: String, at position: SourcePosition) throws -> ([Node], String) {
        let (nodes, tag) = try parseBody(until: endTags)
        guard let tag else {
            throw TemplateError(
                .syntax, "unexpected end of template: the '\(statement)' block opened here is not closed (expected \(endTags.sorted().joined(separator: " or ")))",
                at: position)
        }
        advance()
        return (nodes, tag)
    }

    // Long: one case per statement keyword of Jinja (if, for, set, macro, call, filter, …), each
    // parsing its own clauses; the grammar's table in one place.
    private mutating func parseStatement(_ keyword: String, at position: SourcePosition) throws -> Node {
        advance()
        switch keyword {
        case "if":
            softDepth += 1
            defer { softDepth -= 1 }
            var branches: [(Expr, [Node])] = []
            var condition = try parseTuple()
            try expectBlockEnd()
            while true {
                let (body, tag) = try parseRequiredBody(["elif", "else", "endif"], for: "if", at: position)
                branches.append((condition, body))
                if tag == "elif" {
                    condition = try parseTuple()
                    try expectBlockEnd()
                    continue
                }
                if tag == "else" {
                    try expectBlockEnd()
                    let (otherwise, _) = try parseRequiredBody(["endif"], for: "if", at: position)
                    try expectBlockEnd()
                    return .ifChain(branches, otherwise: otherwise)
                }
                try expectBlockEnd()
                return .ifChain(branches, otherwise: [])
            }
        case "for":
            let target = try parseAssignTarget(allowAttribute: false)
            guard skipName("in") else { throw fail("expected 'in', got \(describe(current.kind))") }
            let iterable = try parseTuple(withCondition: false, extraEndNames: ["recursive"])
            var condition: Expr? = nil
            if skipName("if") { condition = try parseTuple() }
            if isName("recursive") {
                throw TemplateError(.unsupported, "recursive for loops are not supported", at: current.position)
            }
            try expectBlockEnd()
            loopDepth += 1
            let savedSoft = softDepth
            softDepth = 0
            let (body, tag) = try parseRequiredBody(["endfor", "else"], for: "for", at: position)
            softDepth = savedSoft
            loopDepth -= 1
            var otherwise: [Node] = []
            if tag == "else" {
                try expectBlockEnd()
                (otherwise, _) = try parseRequiredBody(["endfor"], for: "for", at: position)
            }
            try expectBlockEnd()
            return .forLoop(target: target, iterable: iterable, condition: condition, body: body, otherwise: otherwise, position)
        case "set":
            let target = try parseAssignTarget(allowAttribute: true)
            if skipOp("=") {
                let value = try parseTuple()
                try expectBlockEnd()
                return .set(target, value, position)
            }
            let filters = try parseFilterChain(requireFirstPipe: true)
            try expectBlockEnd()
            let (body, _) = try parseRequiredBody(["endset"], for: "set", at: position)
            try expectBlockEnd()
            return .setBlock(target, filters: filters, body: body, position)
        case "macro":
            let name = names.intern(try expectName())
            let parameters = try parseSignature()
            try expectBlockEnd()
            let savedLoops = loopDepth, savedSoft = softDepth
            (loopDepth, softDepth) = (0, 0)
            let (body, _) = try parseRequiredBody(["endmacro"], for: "macro", at: position)
            (loopDepth, softDepth) = (savedLoops, savedSoft)
            try expectBlockEnd()
            return .macro(MacroDefinition(name: name, parameters: parameters, body: body, position: position))
        case "call":
            let parameters = isOp("(") ? try parseSignature() : []
            let call = try parseExpression()
            guard case .call = call else { throw fail("expected call") }
            try expectBlockEnd()
            let savedLoops = loopDepth
            loopDepth = 0
            let (body, _) = try parseRequiredBody(["endcall"], for: "call", at: position)
            loopDepth = savedLoops
            try expectBlockEnd()
            return .callBlock(call: call, caller: MacroDefinition(name: NameTable.caller, parameters: parameters, body: body, position: position), position)
        case "filter":
            let filters = try parseFilterChain(requireFirstPipe: false)
            try expectBlockEnd()
            let (body, _) = try parseRequiredBody(["endfilter"], for: "filter", at: position)
            try expectBlockEnd()
            return .filterBlock(filters: filters, body: body, position)
        case "with":
            var assignments: [(AssignTarget, Expr)] = []
            while current.kind != .blockEnd {
                if !assignments.isEmpty { try expectOp(",") }
                let target = try parseAssignTarget(allowAttribute: false)
                try expectOp("=")
                assignments.append((target, try parseExpression()))
            }
            try expectBlockEnd()
            let (body, _) = try parseRequiredBody(["endwith"], for: "with", at: position)
            try expectBlockEnd()
            return .with(assignments: assignments, body: body)
        case "break", "continue":
            guard loopDepth > 0 else { throw TemplateError(.syntax, "'\(keyword)' outside of a loop", at: position) }
            try expectBlockEnd()
            return keyword == "break" ? .loopBreak(position) : .loopContinue(position)
        case "generation":
            try expectBlockEnd()
            let (body, _) = try parseRequiredBody(["endgeneration"], for: "generation", at: position)
            try expectBlockEnd()
            return .generation(body)
        case "include", "import", "from", "extends", "block":
            throw TemplateError(.unsupported, "'\(keyword)' needs other templates, which chat templates cannot load", at: position)
        default:
            throw TemplateError(.syntax, "encountered unknown tag '\(keyword)'", at: position)
        }
    }

    private mutating func parseSignature() throws -> [(Name, Expr?)] {
        try expectOp("(")
        var parameters: [(Name, Expr?)] = []
        while !skipOp(")") {
            if !parameters.isEmpty { try expectOp(",") }
            if skipOp(")") { break }
            let name = names.intern(try expectName())
            let value: Expr? = skipOp("=") ? try parseExpression() : nil
            parameters.append((name, value))
        }
        return parameters
    }

    private mutating func parseAssignTarget(allowAttribute: Bool) throws -> AssignTarget {
        var targets: [AssignTarget] = []
        var sawComma = false
        repeat {
            if isOp("(") {
                advance()
                targets.append(try parseAssignTarget(allowAttribute: false))
                try expectOp(")")
            } else {
                let name = try expectName()
                if allowAttribute, skipOp(".") {
                    targets.append(.attribute(names.intern(name), try expectName()))
                } else {
                    if ["true", "false", "none", "True", "False", "None"].contains(name) {
                        throw fail("cannot assign to '\(name)'")
                    }
                    targets.append(.name(names.intern(name)))
                }
            }
            sawComma = skipOp(",")
        } while sawComma && !(isName("in") || isOp("=") || current.kind == .blockEnd || isOp(")"))
        if targets.count == 1 && !sawComma { return targets[0] }
        return .tuple(targets)
    }

    private mutating func parseFilterChain(requireFirstPipe: Bool) throws -> [(String, Arguments, SourcePosition)] {
        var filters: [(String, Arguments, SourcePosition)] = []
        var first = !requireFirstPipe
        while first || skipOp("|") {
            first = false
            let position = current.position
            let name = try parseDottedName()
            guard Builtins.filters.contains(name) || softDepth > 0 else {
                throw TemplateError(.unsupported, "no filter named '\(name)'", at: position)
            }
            let arguments = isOp("(") ? try parseArguments() : Arguments()
            filters.append((name, arguments, position))
        }
        return filters
    }

    // MARK: expressions

    /// `parse_tuple`: one expression, or a tuple if commas separate several.
    private mutating func parseTuple(withCondition: Bool = true, extraEndNames: Set<String> = [], explicitParentheses: Bool = false) throws -> Expr {
        let position = current.position
        var items: [Expr] = []
        var sawComma = false
        while true {
            if !items.isEmpty {
                guard skipOp(",") else { break }
                sawComma = true
            }
            if current.kind == .blockEnd || current.kind == .variableEnd || isOp(")") || isOp("]") || isOp("}") { break }
            if case .name(let n) = current.kind, extraEndNames.contains(n) { break }
            if items.isEmpty == false || !explicitParentheses || !isOp(")") {
                items.append(withCondition ? try parseExpression() : try parseOr())
            }
        }
        if items.count == 1 && !sawComma { return items[0] }
        if items.isEmpty && !explicitParentheses { throw TemplateError(.syntax, "expected an expression, got \(describe(current.kind))", at: position) }
        return .tuple(items)
    }

    private mutating func parseExpression() throws -> Expr {
        try enter()
        defer { leave() }
        var expr = try parseOr()
        while isName("if") {
            // The whole conditional expression is a soft frame, its first operand included:
            // an unknown filter there was already accepted only if inside one; parse the rest soft.
            advance()
            softDepth += 1
            defer { softDepth -= 1 }
            let test = try parseOr()
            let otherwise: Expr? = skipName("else") ? try parseExpression() : nil
            expr = .conditional(test: test, then: expr, otherwise: otherwise)
        }
        return expr
    }

    private mutating func parseOr() throws -> Expr {
        var left = try parseAnd()
        var wraps = 0
        defer { depth -= wraps }
        while skipName("or") {
            try wrap(&wraps)
            left = .or(left, try parseAnd())
        }
        return left
    }

    private mutating func parseAnd() throws -> Expr {
        var left = try parseNot()
        var wraps = 0
        defer { depth -= wraps }
        while skipName("and") {
            try wrap(&wraps)
            left = .and(left, try parseNot())
        }
        return left
    }

    private mutating func parseNot() throws -> Expr {
        if skipName("not") {
            try enter()
            defer { leave() }
            return .not(try parseNot())
        }
        return try parseCompare()
    }

    private mutating func parseCompare() throws -> Expr {
        let position = current.position
        let first = try parseMath1()
        var ops: [(CompareOperator, Expr)] = []
        while true {
            if case .op(let o) = current.kind, let op = CompareOperator(rawValue: o), op != .contains, op != .notContains {
                advance()
                ops.append((op, try parseMath1()))
            } else if skipName("in") {
                ops.append((.contains, try parseMath1()))
            } else if isName("not"), case .name("in") = nextToken.kind {
                advance()
                advance()
                ops.append((.notContains, try parseMath1()))
            } else {
                break
            }
        }
        return ops.isEmpty ? first : .compare(first, ops, position)
    }

    private mutating func parseMath1() throws -> Expr {
        var left = try parseConcat()
        var wraps = 0
        defer { depth -= wraps }
        while case .op(let o) = current.kind, o == "+" || o == "-" {
            let position = current.position
            try wrap(&wraps)
            advance()
            left = .binary(o, left, try parseConcat(), position)
        }
        return left
    }

    private mutating func parseConcat() throws -> Expr {
        let position = current.position
        var items = [try parseMath2()]
        while skipOp("~") {
            if items.count > maxDepth * 50 { throw TemplateError(.limit, "a '~' chain is longer than \(maxDepth * 50)", at: position) }
            items.append(try parseMath2())
        }
        return items.count == 1 ? items[0] : .concat(items, position)
    }

    private mutating func parseMath2() throws -> Expr {
        var left = try parsePow()
        var wraps = 0
        defer { depth -= wraps }
        while case .op(let o) = current.kind, ["*", "/", "//", "%"].contains(o) {
            let position = current.position
            try wrap(&wraps)
            advance()
            left = .binary(o, left, try parsePow(), position)
        }
        return left
    }

    private mutating func parsePow() throws -> Expr {
        var left = try parseUnary()
        var wraps = 0
        defer { depth -= wraps }
        while isOp("**") {
            let position = current.position
            try wrap(&wraps)
            advance()
            left = .binary("**", left, try parseUnary(), position)
        }
        return left
    }

    private mutating func parseUnary(withFilter: Bool = true) throws -> Expr {
        try enter()
        defer { leave() }
        let position = current.position
        var node: Expr
        if skipOp("-") {
            node = .unary("-", try parseUnary(withFilter: false), position)
        } else if skipOp("+") {
            node = .unary("+", try parseUnary(withFilter: false), position)
        } else {
            node = try parsePrimary()
        }
        node = try parsePostfix(node)
        if withFilter { node = try parseFilterExpr(node) }
        return node
    }

    private mutating func parsePrimary() throws -> Expr {
        let token = current
        switch token.kind {
        case .name(let n):
            advance()
            switch n {
            case "true", "True": return .literal(.bool(true))
            case "false", "False": return .literal(.bool(false))
            case "none", "None": return .literal(.none)
            default: return .name(names.intern(n), token.position)
            }
        case .string(let s):
            advance()
            var value = s
            while case .string(let more) = current.kind {
                value += more
                advance()
            }
            return .literal(.string(value))
        case .integer(let i):
            advance()
            return .literal(.int(i))
        case .float(let d):
            advance()
            return .literal(.float(d))
        case .op("("):
            advance()
            let expr = try parseTuple(explicitParentheses: true)
            try expectOp(")")
            return expr
        case .op("["):
            advance()
            var items: [Expr] = []
            while !isOp("]") {
                if !items.isEmpty { try expectOp(",") }
                if isOp("]") { break }
                items.append(try parseExpression())
            }
            try expectOp("]")
            return .list(items)
        case .op("{"):
            advance()
            var items: [(Expr, Expr)] = []
            while !isOp("}") {
                if !items.isEmpty { try expectOp(",") }
                if isOp("}") { break }
                let key = try parseExpression()
                try expectOp(":")
                items.append((key, try parseExpression()))
            }
            try expectOp("}")
            return .dict(items)
        default:
            throw fail("unexpected \(describe(token.kind))")
        }
    }

    private mutating func parsePostfix(_ start: Expr) throws -> Expr {
        var node = start
        var wraps = 0
        defer { depth -= wraps }
        while true {
            if isOp(".") || isOp("[") || isOp("(") { try wrap(&wraps) }
            if isOp(".") || isOp("[") {
                node = try parseSubscript(node)
            } else if isOp("(") {
                let position = current.position
                node = .call(node, try parseArguments(), position)
            } else {
                return node
            }
        }
    }

    private mutating func parseFilterExpr(_ start: Expr) throws -> Expr {
        var node = start
        var wraps = 0
        defer { depth -= wraps }
        while true {
            if isName("is") || isOp("(") { try wrap(&wraps) }
            if isOp("|") {
                for (name, arguments, position) in try parseFilterChain(requireFirstPipe: true) {
                    try wrap(&wraps)
                    node = .filter(node, name, arguments, position)
                }
            } else if isName("is") {
                node = try parseTest(node)
            } else if isOp("(") {
                let position = current.position
                node = .call(node, try parseArguments(), position)
            } else {
                return node
            }
        }
    }

    private mutating func parseSubscript(_ node: Expr) throws -> Expr {
        let position = current.position
        if skipOp(".") {
            switch current.kind {
            case .name(let n):
                advance()
                return .attribute(node, n, position)
            case .integer(let i):
                advance()
                return .item(node, .literal(.int(i)), position)
            default:
                throw fail("expected name or number after '.'")
            }
        }
        try expectOp("[")
        var subscripts: [Expr] = []
        while !isOp("]") {
            if !subscripts.isEmpty { try expectOp(",") }
            subscripts.append(try parseSubscribed())
        }
        try expectOp("]")
        if subscripts.count == 1 {
            if case .slice(_, let a, let b, let c, _) = subscripts[0] { return .slice(node, a, b, c, position) }
            return .item(node, subscripts[0], position)
        }
        return .item(node, .tuple(subscripts), position)
    }

    /// One subscript: an expression or a slice `a:b:c` (encoded as `.slice` on a placeholder).
    private mutating func parseSubscribed() throws -> Expr {
        let position = current.position
        var parts: [Expr?] = []
        if isOp(":") {
            parts.append(nil)
        } else {
            let e = try parseExpression()
            if !isOp(":") { return e }
            parts.append(e)
        }
        advance()  // ':'
        if isOp("]") || isOp(",") {
            parts.append(nil)
        } else if isOp(":") {
            parts.append(nil)
        } else {
            parts.append(try parseExpression())
        }
        if skipOp(":") {
            if isOp("]") || isOp(",") { parts.append(nil) } else { parts.append(try parseExpression()) }
        } else {
            parts.append(nil)
        }
        return .slice(.literal(.none), parts[0], parts[1], parts[2], position)
    }

    private mutating func parseArguments() throws -> Arguments {
        try expectOp("(")
        var arguments = Arguments()
        while !isOp(")") {
            if !(arguments.positional.isEmpty && arguments.keyword.isEmpty) { try expectOp(",") }
            if isOp(")") { break }
            if isOp("*") || isOp("**") { throw TemplateError(.unsupported, "*args and **kwargs in calls are not supported", at: current.position) }
            if case .name(let n) = current.kind, case .op("=") = nextToken.kind {
                advance()
                advance()
                arguments.keyword.append((n, try parseExpression()))
            } else {
                if !arguments.keyword.isEmpty { throw fail("positional argument after keyword argument") }
                arguments.positional.append(try parseExpression())
            }
        }
        try expectOp(")")
        return arguments
    }

    private mutating func parseDottedName() throws -> String {
        var name = try expectName()
        while isOp("."), case .name = nextToken.kind {
            advance()
            name += "." + (try expectName())
        }
        return name
    }

    private mutating func parseTest(_ node: Expr) throws -> Expr {
        advance()  // 'is'
        let negated = skipName("not")
        let position = current.position
        let name = try parseDottedName()
        guard Builtins.tests.contains(name) || softDepth > 0 else { throw TemplateError(.unsupported, "no test named '\(name)'", at: position) }
        var arguments = Arguments()
        if isOp("(") {
            arguments = try parseArguments()
        } else {
            var takesArgument = false
            switch current.kind {
            case .name(let n): takesArgument = !["else", "or", "and"].contains(n)
            case .string, .integer, .float, .op("["), .op("{"): takesArgument = true
            default: break
            }
            if takesArgument {
                if isName("is") { throw fail("you cannot chain multiple tests with 'is'") }
                arguments.positional = [try parsePostfix(try parsePrimary())]
            }
        }
        return .test(node, name, arguments, negated: negated, position)
    }
}
