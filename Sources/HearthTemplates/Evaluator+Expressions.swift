import Foundation

extension Evaluator {
    // Long: one case per expression node kind (24), each evaluating its operands; the evaluator's
    // dispatch.
    func eval(_ expr: Expr, _ scope: Scope) throws -> JinjaValue {
        switch expr {
        case .literal(let v):
            return v
        case .name(let n, let position):
            try tick(position)
            if let v = scope.lookup(n.id) { return v }
            if n.isGlobal { return .object(CallableObject(.builtin(n.text))) }
            return .undefined(n.text)
        case .list(let items):
            return .list(try items.map { try eval($0, scope) })
        case .tuple(let items):
            return .tuple(try items.map { try eval($0, scope) })
        case .dict(let pairs):
            var d = JinjaDict()
            for (k, v) in pairs { d[try eval(k, scope)] = try eval(v, scope) }
            return .dict(d)
        case .attribute(let base, let name, let position):
            return try getAttribute(try eval(base, scope), name, position)
        case .item(let base, let key, let position):
            return try getItem(try eval(base, scope), try eval(key, scope), position)
        case .slice(let base, let a, let b, let c, let position):
            let value = try eval(base, scope)
            return try slice(
                value, try a.map { try eval($0, scope) }, try b.map { try eval($0, scope) }, try c.map { try eval($0, scope) }, position)
        case .call(let callee, let arguments, let position):
            try tick(position)
            let function: JinjaValue
            if case .attribute(let baseExpr, let name, let attributePosition) = callee {
                // `value.method(...)`: call a str, list or dict method directly, without making
                // the bound-method object `getAttribute` would return for it.
                let base = try eval(baseExpr, scope)
                if Self.hasBuiltinMethod(base, name) {
                    let positional = try arguments.positional.map { try eval($0, scope) }
                    let keyword = try arguments.keyword.map { ($0.0, try eval($0.1, scope)) }
                    return try callMethod(base, name, positional, keyword, position)
                }
                function = try getAttribute(base, name, attributePosition)
            } else if case .name(let n, let namePosition) = callee, n.isGlobal {
                // `range(...)`, `namespace(...)`: the global, unless a variable shadows it.
                try tick(namePosition)
                guard let shadowing = scope.lookup(n.id) else {
                    let positional = try arguments.positional.map { try eval($0, scope) }
                    let keyword = try arguments.keyword.map { ($0.0, try eval($0.1, scope)) }
                    return try callGlobal(n.text, positional, keyword, position)
                }
                function = shadowing
            } else {
                function = try eval(callee, scope)
            }
            var positional = try arguments.positional.map { try eval($0, scope) }
            let keyword = try arguments.keyword.map { ($0.0, try eval($0.1, scope)) }
            return try call(function, &positional, keyword, position)
        case .filter(let base, let name, let arguments, let position):
            try tick(position)
            return try applyFilter(name, try eval(base, scope), arguments, scope, position)
        case .test(let base, let name, let arguments, let negated, let position):
            try tick(position)
            let value = try eval(base, scope)
            let args = try arguments.positional.map { try eval($0, scope) }
            let result = try applyTest(name, value, args, position)
            return .bool(negated ? !result : result)
        case .unary(let op, let operand, let position):
            let v = try eval(operand, scope)
            if case .undefined(let n) = v { throw undefinedError(n, position) }
            switch (op, v) {
            case ("-", .int(let i)):
                guard i != Int.min else { throw TemplateError(.limit, "integer overflow", at: position) }
                return .int(-i)
            case ("-", .float(let d)): return .float(-d)
            case ("-", .bool(let b)): return .int(b ? -1 : 0)
            case ("+", .int), ("+", .float): return v
            case ("+", .bool(let b)): return .int(b ? 1 : 0)
            default: throw TemplateError(.type, "bad operand type for unary \(op): '\(v.typeName)'", at: position)
            }
        case .binary(let op, let l, let r, let position):
            try tick(position)
            let left = try eval(l, scope), right = try eval(r, scope)
            if op == "+", Self.isMarkup(l) || Self.isMarkup(r), case .string(let a) = left, case .string(let b) = right {
                // markupsafe's Markup + str escapes the plain side (`"'"|safe + name`).
                return try checkString((Self.isMarkup(l) ? a : htmlEscape(a)) + (Self.isMarkup(r) ? b : htmlEscape(b)), position)
            }
            return try binary(op, left, right, position)
        case .concat(let items, let position):
            var s = ""
            for item in items { s += try str(try eval(item, scope), position) }
            return try checkString(s, position)
        case .compare(let first, let ops, let position):
            var left = try eval(first, scope)
            for (op, rightExpr) in ops {
                let right = try eval(rightExpr, scope)
                if !(try compare(op, left, right, position)) { return .bool(false) }
                left = right
            }
            return .bool(true)
        case .and(let l, let r):
            let left = try eval(l, scope)
            return left.isTruthy ? try eval(r, scope) : left
        case .or(let l, let r):
            let left = try eval(l, scope)
            return left.isTruthy ? left : try eval(r, scope)
        case .not(let e):
            return .bool(!(try eval(e, scope).isTruthy))
        case .conditional(let test, let then, let otherwise):
            if try eval(test, scope).isTruthy { return try eval(then, scope) }
            if let otherwise { return try eval(otherwise, scope) }
            return .undefined("the conditional expression had no else branch")
        }
    }

    /// Whether an expression's value is markupsafe's `Markup` (the result of `safe` or `escape`,
    /// or of `+` with one): known from the syntax, which covers the templates' use
    /// (`"…"|safe + text`); a `Markup` stored in a variable is a plain string here.
    static func isMarkup(_ expr: Expr) -> Bool {
        switch expr {
        case .filter(_, let name, _, _): return ["safe", "escape", "e", "forceescape"].contains(name)
        case .binary("+", let l, let r, _): return isMarkup(l) || isMarkup(r)
        default: return false
        }
    }

    func undefinedError(_ name: String, _ position: SourcePosition?) -> TemplateError {
        TemplateError(.undefined, "'\(name)' is undefined", at: position)
    }

    // MARK: operators

    func compare(_ op: CompareOperator, _ a: JinjaValue, _ b: JinjaValue, _ position: SourcePosition) throws -> Bool {
        switch op {
        case .equal: return PythonFormat.equal(a, b)
        case .notEqual: return !PythonFormat.equal(a, b)
        case .contains: return try contains(b, a, position)
        case .notContains: return !(try contains(b, a, position))
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            if case .undefined(let n) = a { throw undefinedError(n, position) }
            if case .undefined(let n) = b { throw undefinedError(n, position) }
            guard let c = PythonFormat.compare(a, b) else {
                throw TemplateError(.type, "'\(op.rawValue)' not supported between instances of '\(a.typeName)' and '\(b.typeName)'", at: position)
            }
            switch op {
            case .less: return c == -1
            case .lessOrEqual: return c == -1 || c == 0
            case .greater: return c == 1
            default: return c == 1 || c == 0
            }
        }
    }

    /// Python's `needle in container`.
    func contains(_ container: JinjaValue, _ needle: JinjaValue, _ position: SourcePosition?) throws -> Bool {
        switch container {
        case .string(let s):
            guard case .string(let n) = needle else {
                if case .undefined(let name) = needle { throw undefinedError(name, position) }
                throw TemplateError(.type, "'in <string>' requires string as left operand, not \(needle.typeName)", at: position)
            }
            return StringOps.contains(s, n)
        case .list(let a), .tuple(let a):
            try tick(position, a.count / 8)
            return a.contains { PythonFormat.equal($0, needle) }
        case .dict(let d):
            return d[needle] != nil
        case .undefined:
            return false  // jinja2's Undefined iterates as empty
        case .object(let o):
            if let generator = o as? GeneratorObject {
                return generator.items.contains { PythonFormat.equal($0, needle) }
            }
            throw TemplateError(.type, "argument of type '\(o.typeName)' is not iterable", at: position)
        default:
            throw TemplateError(.type, "argument of type '\(container.typeName)' is not iterable", at: position)
        }
    }

    // Long: one case per operator (19) with Python's semantics for each operand type; a table.
    func binary(_ op: String, _ a: JinjaValue, _ b: JinjaValue, _ position: SourcePosition) throws -> JinjaValue {
        if case .undefined(let n) = a { throw undefinedError(n, position) }
        if case .undefined(let n) = b { throw undefinedError(n, position) }
        func typeError() -> TemplateError {
            TemplateError(.type, "unsupported operand type(s) for \(op): '\(a.typeName)' and '\(b.typeName)'", at: position)
        }
        switch (op, a, b) {
        case ("+", .string(let x), .string(let y)):
            return try checkString(x + y, position)
        case ("+", .list(let x), .list(let y)):
            try checkList(x.count + y.count, position)
            try tick(position, (x.count + y.count) / 16)
            return .list(x + y)
        case ("+", .tuple(let x), .tuple(let y)):
            try checkList(x.count + y.count, position)
            return .tuple(x + y)
        case ("*", .string(let s), _), ("*", _, .string(let s)):
            guard let n = intValue(op == "*" && isString(a) ? b : a) else { throw typeError() }
            if n <= 0 { return .string("") }
            guard s.utf8.count.multipliedReportingOverflow(by: n).partialValue <= limits.maxOutputBytes,
                !s.utf8.count.multipliedReportingOverflow(by: n).overflow
            else {
                throw TemplateError(.limit, "a string is longer than \(limits.maxOutputBytes) bytes", at: position)
            }
            return .string(String(repeating: s, count: n))
        case ("*", .list(let x), _), ("*", _, .list(let x)):
            guard let n = intValue(isList(a) ? b : a) else { throw typeError() }
            if n <= 0 { return .list([]) }
            let (total, overflow) = x.count.multipliedReportingOverflow(by: n)
            if overflow { throw TemplateError(.limit, "a list has more than \(limits.maxListLength) items", at: position) }
            try checkList(total, position)
            try tick(position, total / 16)
            return .list(Array([[JinjaValue]](repeating: x, count: n).joined()))
        default:
            break
        }
        guard let x = PythonFormat.number(a), let y = PythonFormat.number(b) else { throw typeError() }
        if case .int(let i) = x, case .int(let j) = y {
            func overflow() -> TemplateError { TemplateError(.limit, "integer overflow in \(op)", at: position) }
            switch op {
            case "+":
                let (r, o) = i.addingReportingOverflow(j)
                if o { throw overflow() }
                return .int(r)
            case "-":
                let (r, o) = i.subtractingReportingOverflow(j)
                if o { throw overflow() }
                return .int(r)
            case "*":
                let (r, o) = i.multipliedReportingOverflow(by: j)
                if o { throw overflow() }
                return .int(r)
            case "/":
                if j == 0 { throw TemplateError(.type, "division by zero", at: position) }
                return .float(Double(i) / Double(j))
            case "//":
                if j == 0 { throw TemplateError(.type, "integer division or modulo by zero", at: position) }
                if i == Int.min && j == -1 { throw overflow() }
                let q = i / j
                return .int((i % j != 0 && ((i < 0) != (j < 0))) ? q - 1 : q)
            case "%":
                if j == 0 { throw TemplateError(.type, "integer division or modulo by zero", at: position) }
                if j == -1 { return .int(0) }
                let r = i % j
                return .int(r != 0 && ((r < 0) != (j < 0)) ? r + j : r)
            case "**":
                if j < 0 { return .float(pow(Double(i), Double(j))) }
                var result = 1
                var base = i
                var e = j
                while e > 0 {
                    try tick(position)
                    if e & 1 == 1 {
                        let (r, o) = result.multipliedReportingOverflow(by: base)
                        if o { throw overflow() }
                        result = r
                    }
                    e >>= 1
                    if e > 0 {
                        let (b2, o) = base.multipliedReportingOverflow(by: base)
                        if o { throw overflow() }
                        base = b2
                    }
                }
                return .int(result)
            default: throw typeError()
            }
        }
        let p = PythonFormat.double(x), q = PythonFormat.double(y)
        switch op {
        case "+": return .float(p + q)
        case "-": return .float(p - q)
        case "*": return .float(p * q)
        case "/":
            if q == 0 { throw TemplateError(.type, "float division by zero", at: position) }
            return .float(p / q)
        case "//":
            if q == 0 { throw TemplateError(.type, "float floor division by zero", at: position) }
            return .float((p / q).rounded(.down))
        case "%":
            if q == 0 { throw TemplateError(.type, "float modulo", at: position) }
            let r = p.truncatingRemainder(dividingBy: q)
            return .float(r != 0 && ((r < 0) != (q < 0)) ? r + q : r)
        case "**": return .float(pow(p, q))
        default: throw typeError()
        }
    }

    private func isString(_ v: JinjaValue) -> Bool {
        if case .string = v { return true }
        return false
    }

    private func isList(_ v: JinjaValue) -> Bool {
        if case .list = v { return true }
        return false
    }

    func intValue(_ v: JinjaValue) -> Int? {
        switch v {
        case .int(let i): return i
        case .bool(let b): return b ? 1 : 0
        default: return nil
        }
    }

    // MARK: attribute and item access

    /// Whether `value.name` is a bound method of a str, list, tuple or dict (as `getAttribute`
    /// decides it).
    static func hasBuiltinMethod(_ value: JinjaValue, _ name: String) -> Bool {
        switch value {
        case .dict: return Builtins.dictMethods.contains(name)
        case .string: return Builtins.stringMethods.contains(name)
        case .list, .tuple: return Builtins.listMethods.contains(name)
        default: return false
        }
    }

    /// `obj.name`: jinja2's sandboxed `getattr` — the attribute (a method) first, then the item.
    func getAttribute(_ value: JinjaValue, _ name: String, _ position: SourcePosition) throws -> JinjaValue {
        switch value {
        case .undefined(let n):
            throw TemplateError(.undefined, "'\(n)' is undefined (reading attribute '\(name)')", at: position)
        case .dict(let d):
            if Builtins.dictMethods.contains(name) { return .object(CallableObject(.method(value, name))) }
            return d[string: name] ?? .undefined("'dict object' has no attribute '\(name)'")
        case .string:
            if Builtins.stringMethods.contains(name) { return .object(CallableObject(.method(value, name))) }
        case .list, .tuple:
            if Builtins.listMethods.contains(name) { return .object(CallableObject(.method(value, name))) }
        case .object(let o):
            switch o.objectKind {
            case .namespace:
                let ns = unsafeDowncast(o, to: NamespaceObject.self)  // the tag says so
                return ns.attributes[string: name] ?? .undefined("'Namespace object' has no attribute '\(name)'")
            case .loop:
                return loopAttribute(unsafeDowncast(o, to: LoopObject.self), name)
            case .other:
                break
            }
        default:
            break
        }
        return .undefined("'\(value.typeName) object' has no attribute '\(name)'")
    }

    /// `obj[key]`: the item first, then (for a string key) the attribute.
    func getItem(_ value: JinjaValue, _ key: JinjaValue, _ position: SourcePosition) throws -> JinjaValue {
        switch value {
        case .undefined(let n):
            throw TemplateError(.undefined, "'\(n)' is undefined (reading an item)", at: position)
        case .dict(let d):
            if let v = d[key] { return v }
        case .list(let a), .tuple(let a):
            if let i = intValue(key) {
                let j = i < 0 ? i + a.count : i
                if j >= 0 && j < a.count { return a[j] }
                return .undefined("list index out of range")
            }
        case .string(let s):
            if let i = intValue(key) {
                let scalars = s.unicodeScalars
                let n = scalars.count
                let j = i < 0 ? i + n : i
                if j >= 0 && j < n { return .string(String(scalars[scalars.index(scalars.startIndex, offsetBy: j)])) }
                return .undefined("string index out of range")
            }
        case .object(let o):
            if o is NamespaceObject || o is LoopObject, case .string(let name) = key { return try getAttribute(value, name, position) }
        default:
            break
        }
        if case .string(let name) = key, !name.hasPrefix("_") {
            switch value {
            case .dict:
                if Builtins.dictMethods.contains(name) { return .object(CallableObject(.method(value, name))) }
            case .string, .list, .tuple:
                return try getAttribute(value, name, position)
            default: break
            }
        }
        return .undefined("\(value.typeName) object has no element \(PythonFormat.repr(key, depth: 0, limit: 4))")
    }

    func slice(_ value: JinjaValue, _ start: JinjaValue?, _ stop: JinjaValue?, _ step: JinjaValue?, _ position: SourcePosition) throws -> JinjaValue {
        func bound(_ v: JinjaValue?) throws -> Int? {
            guard let v else { return nil }
            if case .none = v { return nil }
            guard let i = intValue(v) else {
                if case .undefined(let n) = v { throw undefinedError(n, position) }
                throw TemplateError(.type, "slice indices must be integers or None", at: position)
            }
            return i
        }
        let s = try bound(start), e = try bound(stop), st = try bound(step) ?? 1
        if st == 0 { throw TemplateError(.type, "slice step cannot be zero", at: position) }
        func indices(_ n: Int) -> [Int] {
            func clamp(_ i: Int?, _ def: Int, lower: Int, upper: Int) -> Int {
                guard var i else { return def }
                if i < 0 { i += n }
                return Swift.min(Swift.max(i, lower), upper)
            }
            var out: [Int] = []
            if st > 0 {
                var i = clamp(s, 0, lower: 0, upper: n)
                let end = clamp(e, n, lower: 0, upper: n)
                while i < end { out.append(i); i += st }
            } else {
                var i = clamp(s, n - 1, lower: -1, upper: n - 1)
                let end = clamp(e, -1, lower: -1, upper: n - 1)
                while i > end { out.append(i); i += st }
            }
            return out
        }
        switch value {
        case .list(let a):
            if st == 1 {
                let n = a.count
                func c(_ i: Int?, _ d: Int) -> Int { guard var i else { return d }; if i < 0 { i += n }; return Swift.min(Swift.max(i, 0), n) }
                let lo = c(s, 0), hi = c(e, n)
                return .list(lo < hi ? Array(a[lo..<hi]) : [])
            }
            return .list(indices(a.count).map { a[$0] })
        case .tuple(let a):
            return .tuple(indices(a.count).map { a[$0] })
        case .string(let str):
            let scalars = Array(str.unicodeScalars)
            var out = String.UnicodeScalarView()
            for i in indices(scalars.count) { out.append(scalars[i]) }
            return .string(String(out))
        case .undefined(let n):
            throw undefinedError(n, position)
        default:
            throw TemplateError(.type, "'\(value.typeName)' object is not subscriptable", at: position)
        }
    }

    func loopAttribute(_ loop: LoopObject, _ name: String) -> JinjaValue {
        let n = loop.items.count
        let i = loop.index0
        switch name {
        case "index": return .int(i + 1)
        case "index0": return .int(i)
        case "revindex": return .int(n - i)
        case "revindex0": return .int(n - i - 1)
        case "first": return .bool(i == 0)
        case "last": return .bool(i == n - 1)
        case "length": return .int(n)
        case "depth": return .int(loop.depth0 + 1)
        case "depth0": return .int(loop.depth0)
        case "previtem": return i > 0 ? loop.items[i - 1] : .undefined("there is no previous item")
        case "nextitem": return i + 1 < n ? loop.items[i + 1] : .undefined("there is no next item")
        case "cycle", "changed": return .object(CallableObject(.loopMethod(loop, name)))
        default: return .undefined("'LoopContext object' has no attribute '\(name)'")
        }
    }
}
