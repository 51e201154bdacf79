/// A value a template sees or makes: Python's data model as jinja2 exposes it.
///
/// Lists, tuples and dicts are values (Swift copy-on-write): the sandbox transformers renders in
/// forbids mutating them, so sharing is never observable. Namespaces, loops and callables are
/// objects that only exist inside one render.
package enum JinjaValue: @unchecked Sendable {
    // @unchecked: the payloads are immutable values except `object`, whose classes (namespaces,
    // loop state, macros) are created by one render and never escape it to another thread.

    /// jinja2's `Undefined`; the payload names what was missing (for error messages).
    case undefined(String)
    /// Python's `None`.
    case none
    /// A `bool`.
    case bool(Bool)
    /// An `int` (64-bit here; overflow is a typed error, not a big integer).
    case int(Int)
    /// A `float`.
    case float(Double)
    /// A `str`.
    case string(String)
    /// A `list`.
    case list([JinjaValue])
    /// A `tuple` (printed with parentheses, unequal to a list).
    case tuple([JinjaValue])
    /// A `dict` (insertion-ordered).
    case dict(JinjaDict)
    /// A namespace, loop, macro or builtin function (made by the template, not by callers).
    case object(JinjaObject)

    /// Python truthiness (`Undefined` is false).
    package var isTruthy: Bool {
        switch self {
        case .undefined, .none: return false
        case .bool(let b): return b
        case .int(let i): return i != 0
        case .float(let d): return d != 0
        case .string(let s): return !s.isEmpty
        case .list(let a), .tuple(let a): return !a.isEmpty
        case .dict(let d): return !d.isEmpty
        case .object: return true
        }
    }

    /// Whether this is jinja2's `Undefined`.
    package var isUndefined: Bool {
        if case .undefined = self { return true }
        return false
    }

    /// Python's type name, for error messages that match Python's.
    var typeName: String {
        switch self {
        case .undefined: return "Undefined"
        case .none: return "NoneType"
        case .bool: return "bool"
        case .int: return "int"
        case .float: return "float"
        case .string: return "str"
        case .list: return "list"
        case .tuple: return "tuple"
        case .dict: return "dict"
        case .object(let o): return o.typeName
        }
    }
}

extension JinjaValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    package init(stringLiteral value: String) { self = .string(value) }
    package init(integerLiteral value: Int) { self = .int(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(floatLiteral value: Double) { self = .float(value) }
    package init(arrayLiteral elements: JinjaValue...) { self = .list(elements) }
    package init(dictionaryLiteral elements: (String, JinjaValue)...) {
        var d = JinjaDict()
        for (k, v) in elements { d[.string(k)] = v }
        self = .dict(d)
    }
    package init(nilLiteral: ()) { self = .none }
}

/// A dict key as Python hashes it: `True == 1 == 1.0` are one key.
struct DictKey: Hashable {
    enum Storage: Hashable {
        case none, int(Int), float(Double), string(String), other(String)
    }
    let storage: Storage

    init(_ value: JinjaValue) {
        switch value {
        case .none, .undefined: storage = .none
        case .bool(let b): storage = .int(b ? 1 : 0)
        case .int(let i): storage = .int(i)
        case .float(let d):
            if d == d.rounded(), abs(d) < 9e18 { storage = .int(Int(d)) } else { storage = .float(d) }
        case .string(let s): storage = .string(s)
        default: storage = .other(PythonFormat.repr(value, depth: 0, limit: 32))
        }
    }
}

/// An insertion-ordered dict, as Python's. Small dicts (messages, tool calls) are searched
/// linearly; a hash index is built past 16 entries. The entries live in one copy-on-write box, so
/// a dict is one reference wide and copying it (into a `JinjaValue`, out of a list) is one retain.
package struct JinjaDict: Sendable {
    /// The entries; mutated only through a uniquely referenced box (copy-on-write).
    final class Storage: @unchecked Sendable {
        // @unchecked: a box is mutated only while `isKnownUniquelyReferenced` says one dict holds
        // it; shared boxes are never written.
        // Unchecked: no two accesses to a box overlap (each is one statement of `JinjaDict`).
        @exclusivity(unchecked) var keys: [JinjaValue]
        @exclusivity(unchecked) var values: [JinjaValue]
        @exclusivity(unchecked) var index: [DictKey: Int]?

        init(keys: [JinjaValue] = [], values: [JinjaValue] = [], index: [DictKey: Int]? = nil) {
            self.keys = keys
            self.values = values
            self.index = index
        }

        static let empty = Storage()
    }

    private var storage: Storage

    /// The keys, in insertion order.
    var keys: [JinjaValue] { storage.keys }
    /// The values, in the order of `keys`.
    package var values: [JinjaValue] { storage.values }

    /// An empty dict.
    package init() { storage = .empty }

    /// The number of entries.
    package var count: Int { storage.keys.count }
    /// Whether the dict is empty.
    package var isEmpty: Bool { storage.keys.isEmpty }

    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&storage) {
            storage = Storage(keys: storage.keys, values: storage.values, index: storage.index)
        }
    }

    private func position(_ key: JinjaValue) -> Int? {
        let storage = self.storage
        if let index = storage.index { return index[DictKey(key)] }
        if case .string(let s) = key { return position(string: s) }
        let k = DictKey(key)
        for i in storage.keys.indices where DictKey(storage.keys[i]) == k { return i }
        return nil
    }

    private func position(string s: String) -> Int? {
        let storage = self.storage
        if let index = storage.index { return index[DictKey(.string(s))] }
        let length = s.utf8.count  // O(1); unequal lengths skip the string comparison
        return storage.keys.withUnsafeBufferPointer { keys in
            for i in 0..<keys.count {
                if case .string(let k) = keys[i], k.utf8.count == length, k == s { return i }  // as PythonFormat.stringsEqual
            }
            return nil
        }
    }

    /// The value under `key`, or nil; setting appends a new key or replaces the value in place.
    package subscript(key: JinjaValue) -> JinjaValue? {
        get { position(key).map { storage.values[$0] } }
        set {
            if let newValue {
                makeUnique()
                if let i = position(key) {
                    storage.values[i] = newValue
                    return
                }
                storage.keys.append(key)
                storage.values.append(newValue)
                if storage.index != nil {
                    storage.index?[DictKey(key)] = storage.keys.count - 1
                } else if storage.keys.count > 16 {
                    var built: [DictKey: Int] = [:]
                    for (i, k) in storage.keys.enumerated() { built[DictKey(k)] = i }
                    storage.index = built
                }
            } else if let i = position(key) {
                // Removal is rare (never done by templates); rebuild the index.
                makeUnique()
                storage.keys.remove(at: i)
                storage.values.remove(at: i)
                if storage.index != nil {
                    var built: [DictKey: Int] = [:]
                    for (i, k) in storage.keys.enumerated() { built[DictKey(k)] = i }
                    storage.index = built
                }
            }
        }
    }

    /// The value under a string key.
    package subscript(string key: String) -> JinjaValue? {
        position(string: key).map { storage.values[$0] }
    }

    /// The entries in insertion order.
    package var entries: [(key: JinjaValue, value: JinjaValue)] {
        Array(zip(storage.keys, storage.values)).map { (key: $0.0, value: $0.1) }
    }
}

/// A reference object inside one render: a namespace, a loop, a callable.
package class JinjaObject: @unchecked Sendable {
    // @unchecked: created and used by one render on one thread (see JinjaValue).
    var typeName: String { "object" }

    /// Which subclass an object is, read instead of a dynamic cast where attributes are read.
    enum ObjectKind { case namespace, loop, other }
    /// Set once by the subclass's initializer.
    let objectKind: ObjectKind

    init(objectKind: ObjectKind = .other) { self.objectKind = objectKind }
}

/// `namespace(...)`: the one mutable object a template can make (`{% set ns.x = 1 %}`).
final class NamespaceObject: JinjaObject, @unchecked Sendable {
    // Unchecked: one render, one thread, and each access is one statement.
    @exclusivity(unchecked) var attributes = JinjaDict()
    override var typeName: String { "Namespace" }
    init() { super.init(objectKind: .namespace) }
}

/// A callable: a macro, a builtin, a bound method, `caller`, `loop.cycle`.
final class CallableObject: JinjaObject, @unchecked Sendable {
    enum Kind {
        case macro(MacroDefinition, Scope)
        case caller(MacroDefinition, Scope)
        case builtin(String)
        case method(JinjaValue, String)
        case loopMethod(LoopObject, String)
    }
    let kind: Kind
    init(_ kind: Kind) { self.kind = kind }
    override var typeName: String {
        switch kind {
        case .macro: return "Macro"
        case .caller: return "Macro"
        case .builtin: return "builtin_function_or_method"
        case .method: return "builtin_function_or_method"
        case .loopMethod: return "method"
        }
    }
}

/// What jinja2's `map`, `select`, `reject`, `selectattr` and `rejectattr` return: a Python
/// generator, always true, without a length, not JSON; iterating, `list`, `join`, `first` work.
final class GeneratorObject: JinjaObject, @unchecked Sendable {
    let items: [JinjaValue]
    init(_ items: [JinjaValue]) { self.items = items }
    override var typeName: String { "generator" }
}

/// The `loop` variable of a `for`.
final class LoopObject: JinjaObject, @unchecked Sendable {
    // Unchecked: one render, one thread, and each access is one statement.
    @exclusivity(unchecked) var items: [JinjaValue] = []
    @exclusivity(unchecked) var index0 = 0
    @exclusivity(unchecked) var depth0 = 0
    @exclusivity(unchecked) var lastChanged: [JinjaValue]? = nil
    override var typeName: String { "LoopContext" }
    init() { super.init(objectKind: .loop) }
}
