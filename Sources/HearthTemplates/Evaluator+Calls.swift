import Foundation

extension Evaluator {
    func call(
        _ function: JinjaValue, _ positional: inout [JinjaValue], _ keyword: [(String, JinjaValue)], _ position: SourcePosition
    ) throws -> JinjaValue {
        guard case .object(let object) = function, let callable = object as? CallableObject else {
            if case .undefined(let n) = function { throw TemplateError(.undefined, "'\(n)' is undefined (called as a function)", at: position) }
            throw TemplateError(.type, "'\(function.typeName)' object is not callable", at: position)
        }
        switch callable.kind {
        case .macro(let definition, let scope), .caller(let definition, let scope):
            return try callMacro(definition, scope, positional, keyword, position)
        case .builtin(let name):
            return try callGlobal(name, positional, keyword, position)
        case .method(let receiver, let name):
            return try callMethod(receiver, name, positional, keyword, position)
        case .loopMethod(let loop, let name):
            if name == "cycle" {
                guard !positional.isEmpty else { throw TemplateError(.type, "no items for cycling given", at: position) }
                return positional[loop.index0 % positional.count]
            }
            // changed(*values): true when the values differ from the last call's.
            if let last = loop.lastChanged, PythonFormat.equal(.list(last), .list(positional)) { return .bool(false) }
            loop.lastChanged = positional
            return .bool(true)
        }
    }

    private func callMacro(
        _ definition: MacroDefinition, _ scope: Scope, _ positional: [JinjaValue], _ keyword: [(String, JinjaValue)],
        _ position: SourcePosition
    ) throws -> JinjaValue {
        callDepth += 1
        defer { callDepth -= 1 }
        if callDepth > limits.maxCallDepth {
            throw TemplateError(.limit, "macro calls nest deeper than \(limits.maxCallDepth)", at: position)
        }
        let frame = Scope(parent: scope)
        var kwargs = JinjaDict()
        let parameters = definition.parameters
        // Which parameters have a value: bits for the first 64, an array past them (no allocation
        // for a macro's usual handful).
        var boundBits: UInt64 = 0
        var boundRest = [Bool](repeating: false, count: max(0, parameters.count - 64))
        func isBound(_ i: Int) -> Bool { i < 64 ? boundBits & (1 << UInt64(i)) != 0 : boundRest[i - 64] }
        func bind(_ i: Int) { if i < 64 { boundBits |= 1 << UInt64(i) } else { boundRest[i - 64] = true } }
        for i in 0..<min(positional.count, parameters.count) {
            frame.variables[parameters[i].0.id] = positional[i]
            bind(i)
        }
        let extra = positional.count > parameters.count ? Array(positional[parameters.count...]) : []
        for (name, value) in keyword {
            if let i = parameters.firstIndex(where: { PythonFormat.stringsEqual($0.0.text, name) }) {
                if isBound(i) {
                    throw TemplateError(.type, "macro '\(definition.name.text)' got multiple values for argument '\(name)'", at: position)
                }
                frame.variables[parameters[i].0.id] = value
                bind(i)
            } else if name == "caller" {
                frame.variables[NameTable.caller.id] = value
            } else {
                kwargs[.string(name)] = value
            }
        }
        for (i, (name, defaultValue)) in parameters.enumerated() where !isBound(i) {
            frame.variables[name.id] = try defaultValue.map { try eval($0, frame) } ?? .undefined("parameter '\(name.text)' was not provided")
        }
        frame.variables[NameTable.varargs.id] = .tuple(extra)
        frame.variables[NameTable.kwargs.id] = .dict(kwargs)
        return .string(try capture(definition.body, frame))
    }

    private func argument(
        _ positional: [JinjaValue], _ keyword: [(String, JinjaValue)], _ index: Int, _ name: String
    ) -> JinjaValue? {
        if index < positional.count { return positional[index] }
        return keyword.first { $0.0 == name }?.1
    }

    func callGlobal(_ name: String, _ positional: [JinjaValue], _ keyword: [(String, JinjaValue)], _ position: SourcePosition) throws -> JinjaValue {
        switch name {
        case "raise_exception":
            let message = try str(argument(positional, keyword, 0, "message") ?? .string(""), position)
            throw TemplateError(.raised, message, at: position)
        case "strftime_now":
            guard case .string(let format) = argument(positional, keyword, 0, "format") ?? JinjaValue.none else {
                throw TemplateError(.type, "strftime_now() needs a format string", at: position)
            }
            return .string(try Strftime.format(format, now, timeZone, position))
        case "range":
            let ints = try positional.map { v -> Int in
                guard let i = intValue(v) else { throw TemplateError(.type, "'\(v.typeName)' object cannot be interpreted as an integer", at: position) }
                return i
            }
            var start = 0, stop = 0, step = 1
            switch ints.count {
            case 1: stop = ints[0]
            case 2: start = ints[0]; stop = ints[1]
            case 3: start = ints[0]; stop = ints[1]; step = ints[2]
            default: throw TemplateError(.type, "range expected 1 to 3 arguments, got \(ints.count)", at: position)
            }
            if step == 0 { throw TemplateError(.type, "range() arg 3 must not be zero", at: position) }
            let count = step > 0 ? (stop > start ? (stop - start - 1) / step + 1 : 0) : (start > stop ? (start - stop - 1) / (-step) + 1 : 0)
            try checkList(count, position)
            try tick(position, count / 16)
            return .list(stride(from: start, to: stop, by: step).map { .int($0) })
        case "dict":
            var d = JinjaDict()
            if let first = positional.first {
                switch first {
                case .dict(let other): d = other
                case .list(let pairs), .tuple(let pairs):
                    for pair in pairs {
                        guard case .list(let kv) = pair, kv.count == 2 else {
                            if case .tuple(let kv) = pair, kv.count == 2 { d[kv[0]] = kv[1]; continue }
                            throw TemplateError(.type, "dictionary update sequence element has the wrong length", at: position)
                        }
                        d[kv[0]] = kv[1]
                    }
                default: throw TemplateError(.type, "'\(first.typeName)' object is not iterable", at: position)
                }
            }
            for (k, v) in keyword { d[.string(k)] = v }
            return .dict(d)
        case "namespace":
            let ns = NamespaceObject()
            if let first = positional.first {
                guard case .dict(let d) = first else { throw TemplateError(.type, "namespace() takes a dict or keywords", at: position) }
                ns.attributes = d
            }
            for (k, v) in keyword { ns.attributes[.string(k)] = v }
            for key in ns.attributes.keys {
                if case .string(let k) = key, k.hasPrefix("_") {
                    throw TemplateError(.security, "chat templates cannot store underscore-prefixed attributes on a namespace ('\(k)')", at: position)
                }
            }
            return .object(ns)
        default:
            throw TemplateError(.unsupported, "the global '\(name)' is not supported", at: position)
        }
    }
}

/// The names this interpreter knows; the parser refuses unknown filters and tests at compile
/// time, as jinja2 does.
enum Builtins {
    static let globals: Set<String> = ["raise_exception", "strftime_now", "range", "dict", "namespace"]

    static let filters: Set<String> = [
        "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape", "first", "float",
        "forceescape", "indent", "int", "items", "join", "last", "length", "list", "lower", "map", "max", "min", "reject",
        "rejectattr", "replace", "reverse", "round", "safe", "select", "selectattr", "sort", "string", "sum", "title",
        "tojson", "trim", "unique", "upper", "wordcount",
    ]

    static let tests: Set<String> = [
        "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "==", "escaped", "even", "false", "filter", "float",
        "ge", ">=", "gt", ">", "greaterthan", "in", "integer", "iterable", "le", "<=", "lower", "lt", "<", "lessthan",
        "mapping", "ne", "!=", "none", "number", "odd", "sameas", "sequence", "string", "test", "true", "undefined",
        "upper",
    ]

    static let stringMethods: Set<String> = [
        "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "upper", "lower", "title",
        "capitalize", "replace", "find", "rfind", "index", "rindex", "count", "join", "isdigit", "isalpha", "isalnum",
        "isspace", "islower", "isupper", "zfill", "center", "ljust", "rjust", "partition", "rpartition", "removeprefix",
        "removesuffix", "swapcase", "format", "encode", "casefold", "isnumeric", "isdecimal", "istitle", "expandtabs",
    ]

    static let listMethods: Set<String> = [
        "index", "count", "append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear", "copy",
    ]

    static let dictMethods: Set<String> = [
        "items", "keys", "values", "get", "copy", "pop", "popitem", "update", "setdefault", "clear",
    ]

    /// Methods that mutate their receiver: the immutable sandbox refuses them.
    static let mutatingMethods: Set<String> = [
        "append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear", "popitem", "update", "setdefault",
    ]
}
