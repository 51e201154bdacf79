/// A pattern (or a `format`) together with `minLength`/`maxLength` (issue 59 item 2): the strings
/// the pattern matches whose length in characters — Unicode scalars, as JSON Schema and the
/// `jsonschema` package count them — lies within the bounds. Built as the pattern's DFA times a
/// character counter: one grammar rule per reachable state and count from which the end of the
/// string can still be reached, so every prefix the grammar allows can be completed within the
/// bounds (no dead ends for the token masks). Where the pattern's own lengths already lie within
/// the bounds, it is the pattern's plain expression; where none does, `.unsatisfiable`.
extension RegularExpression {
    /// The most DFA states a bounded pattern may have, and the most (state, count) rules.
    static let maxBoundedStates = 2_000
    static let maxBoundedRules = 40_000

    /// The JSON-string expression for the strings `pattern` matches (anywhere, with `search`, as
    /// JSON Schema's `pattern`; whole, without) whose length is in `minLength...maxLength`.
    static func bounded(
        _ pattern: String, search: Bool, minLength: Int, maxLength: Int?, builder: inout GrammarBuilder, path: String
    ) throws -> GrammarExpression {
        if let maxLength, maxLength < minLength {
            throw ConstraintError(.unsatisfiable, "maxLength \(maxLength) is below minLength \(minLength)", at: path + "/maxLength")
        }
        var parser = RegexParser(Array(pattern.unicodeScalars))
        let node = try whole(try parser.parse(), search: search)
        let (shortest, longest) = node.lengths
        if let maxLength, shortest > maxLength {
            throw ConstraintError(
                .unsatisfiable, "every string the pattern matches is longer than maxLength \(maxLength)", at: path + "/maxLength")
        }
        if let longest, longest < minLength {
            throw ConstraintError(
                .unsatisfiable, "every string the pattern matches is shorter than minLength \(minLength)", at: path + "/minLength")
        }
        let withinMax = maxLength.map { m in longest.map { $0 <= m } ?? false } ?? true
        if shortest >= minLength && withinMax {
            return try expression(pattern, encoding: .jsonString, search: search)
        }
        var nfa = NFA()
        let start = nfa.add(), accept = nfa.add()
        try nfa.build(node, from: start, to: accept, path: path)
        let dfa = try DFA(nfa, start: start, accept: accept, path: path)
        return try dfa.counted(
            minLength: minLength, maxLength: maxLength, name: boundedRuleName(pattern, search, minLength, maxLength),
            builder: &builder, path: path)
    }

    /// The JSON-string expression for the strings that match both `format` (a format's pattern,
    /// whole) and `pattern` (anywhere, as JSON Schema's `pattern`), of `minLength...maxLength`
    /// characters: the two automata's product, times a character counter when bounded. Every
    /// prefix it allows can still be completed (no dead ends); `.unsatisfiable` when no string
    /// is in both.
    static func intersected(
        format: String, pattern: String, minLength: Int, maxLength: Int?, builder: inout GrammarBuilder, path: String
    ) throws -> GrammarExpression {
        if let maxLength, maxLength < minLength {
            throw ConstraintError(.unsatisfiable, "maxLength \(maxLength) is below minLength \(minLength)", at: path + "/maxLength")
        }
        func automaton(_ text: String, search: Bool, at location: String) throws -> DFA {
            var parser = RegexParser(Array(text.unicodeScalars))
            let node = try whole(try parser.parse(), search: search)
            var nfa = NFA()
            let start = nfa.add(), accept = nfa.add()
            try nfa.build(node, from: start, to: accept, path: location)
            return try DFA(nfa, start: start, accept: accept, path: location)
        }
        let both = try DFA(intersecting: try automaton(format, search: false, at: path + "/format"),
                           try automaton(pattern, search: true, at: path + "/pattern"), path: path)
        var name = "both_" + boundedRuleName(format + "\u{0}" + pattern, false, minLength, maxLength)
        name = String(name.prefix(120))
        do {
            return try both.counted(minLength: minLength, maxLength: maxLength, name: name, builder: &builder, path: path)
        } catch let error as ConstraintError where error.kind == .unsatisfiable {
            throw ConstraintError(.unsatisfiable, "no string matches both the format and the pattern within the length bounds", at: path + "/pattern")
        }
    }

    /// The whole-string node: each top-level alternative with its anchors removed and, with
    /// `search`, any text allowed before (no `^`) and after (no `$`) it.
    private static func whole(_ tree: RegexNode, search: Bool) throws -> RegexNode {
        let any = RegexNode.repeating(.characters(.all), min: 0, max: nil)
        var branches: [RegexNode] = []
        for branch in tree.anchoredBranches {
            try branch.items.forEach(rejectAnchors)
            branches.append(
                .sequence((search && !branch.anchoredStart ? [any] : []) + branch.items + (search && !branch.anchoredEnd ? [any] : [])))
        }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    private static func rejectAnchors(_ node: RegexNode) throws {
        switch node {
        case .characters: return
        case .sequence(let items), .alternation(let items): try items.forEach(rejectAnchors)
        case .repeating(let body, _, _): try rejectAnchors(body)
        case .anchor(let start, let offset): throw RegexNode.strayAnchor(start: start, offset: offset)
        }
    }

    /// A stable name for the rules of one pattern and bounds (the same pair twice shares them).
    private static func boundedRuleName(_ pattern: String, _ search: Bool, _ lo: Int, _ hi: Int?) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(search)|\(lo)|\(hi.map(String.init) ?? "-")|\(pattern)".utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return "strlen_" + String(hash, radix: 16)
    }
}

extension RegexNode {
    /// The fewest and most characters a match has (nil: no most).
    var lengths: (Int, Int?) {
        switch self {
        case .characters: return (1, 1)
        case .anchor: return (0, 0)
        case .sequence(let items):
            var lo = 0
            var hi: Int? = 0
            for item in items {
                let (a, b) = item.lengths
                lo += a
                hi = hi.flatMap { h in b.map { h + $0 } }
            }
            return (lo, hi)
        case .alternation(let options):
            let all = options.map(\.lengths)
            let hi = all.contains { $0.1 == nil } ? nil : all.compactMap(\.1).max() ?? 0
            return (all.map(\.0).min() ?? 0, hi)
        case .repeating(let body, let min, let max):
            let (a, b) = body.lengths
            return (a * min, max.flatMap { m in b.map { $0 * m } } ?? (b == 0 ? 0 : nil))
        }
    }
}

/// A Thompson automaton over Unicode scalars.
private struct NFA {
    var edges: [[(ScalarSet, Int)]] = []
    var epsilons: [[Int]] = []

    mutating func add() -> Int {
        edges.append([])
        epsilons.append([])
        return edges.count - 1
    }

    /// States for `node` between `from` and `to`.
    mutating func build(_ node: RegexNode, from: Int, to: Int, path: String) throws {
        guard edges.count <= RegularExpression.maxBoundedStates * 8 else {
            throw ConstraintError(
                .tooComplex, "the pattern is too large to bound its length; put the length in the pattern", at: path + "/pattern")
        }
        switch node {
        case .characters(let set):
            edges[from].append((set, to))
        case .anchor:
            epsilons[from].append(to)
        case .sequence(let items):
            var current = from
            for (k, item) in items.enumerated() {
                let next = k == items.count - 1 ? to : add()
                try build(item, from: current, to: next, path: path)
                current = next
            }
            if items.isEmpty { epsilons[from].append(to) }
        case .alternation(let options):
            for option in options { try build(option, from: from, to: to, path: path) }
        case .repeating(let body, let min, let max):
            var current = from
            for _ in 0..<min {
                let next = add()
                try build(body, from: current, to: next, path: path)
                current = next
            }
            if let max {
                for _ in min..<max {
                    let next = add()
                    try build(body, from: current, to: next, path: path)
                    epsilons[current].append(to)
                    current = next
                }
                epsilons[current].append(to)
            } else {
                let loop = add()
                epsilons[current].append(loop)
                try build(body, from: loop, to: loop, path: path)
                epsilons[loop].append(to)
            }
        }
    }

    func closure(_ states: [Int]) -> [Int] {
        var seen = Set(states)
        var stack = states
        while let s = stack.popLast() {
            for t in epsilons[s] where seen.insert(t).inserted { stack.append(t) }
        }
        return seen.sorted()
    }
}

/// The subset construction of an ``NFA`` over the coarsest partition of its character sets.
private struct DFA {
    /// Disjoint character classes; a transition reads one of them.
    var classes: [ScalarSet] = []
    /// Per state, the target per class (nil: none).
    var next: [[Int?]] = []
    var accepting: [Bool] = []

    init(_ nfa: NFA, start: Int, accept: Int, path: String) throws {
        var sets: [ScalarSet] = []
        for list in nfa.edges { for (set, _) in list where !sets.contains(set) { sets.append(set) } }
        for set in sets {
            var refined: [ScalarSet] = []
            var rest = set
            for c in classes {
                let inside = c.intersection(set), outside = c.subtracting(set)
                if !inside.isEmpty { refined.append(inside) }
                if !outside.isEmpty { refined.append(outside) }
                rest = rest.subtracting(c)
            }
            if !rest.isEmpty { refined.append(rest) }
            classes = refined
        }
        var index: [[Int]: Int] = [:]
        var queue: [[Int]] = []
        func state(_ key: [Int]) throws -> Int {
            if let i = index[key] { return i }
            guard index.count < RegularExpression.maxBoundedStates else {
                throw ConstraintError(
                    .tooComplex, "the pattern has more than \(RegularExpression.maxBoundedStates) states to bound its length",
                    at: path + "/pattern")
            }
            index[key] = index.count
            queue.append(key)
            next.append(Array(repeating: nil, count: classes.count))
            accepting.append(key.contains(accept))
            return index.count - 1
        }
        _ = try state(nfa.closure([start]))
        var k = 0
        while k < queue.count {
            let key = queue[k]
            for (c, cls) in classes.enumerated() {
                var targets: [Int] = []
                for s in key { for (set, t) in nfa.edges[s] where !set.intersection(cls).isEmpty { targets.append(t) } }
                if !targets.isEmpty { next[k][c] = try state(nfa.closure(targets)) }
            }
            k += 1
        }
    }

    /// The product of two automata over the nonempty intersections of their classes: the strings
    /// both accept.
    init(intersecting a: DFA, _ b: DFA, path: String) throws {
        var pairs: [(Int, Int)] = []
        for (i, ca) in a.classes.enumerated() {
            for (j, cb) in b.classes.enumerated() {
                let common = ca.intersection(cb)
                if !common.isEmpty {
                    classes.append(common)
                    pairs.append((i, j))
                }
            }
        }
        var index: [Int: Int] = [:]
        var queue: [(Int, Int)] = []
        let width = b.next.count
        func state(_ qa: Int, _ qb: Int) throws -> Int {
            if let i = index[qa * width + qb] { return i }
            guard index.count < RegularExpression.maxBoundedStates else {
                throw ConstraintError(
                    .tooComplex, "the format and the pattern together have more than \(RegularExpression.maxBoundedStates) states",
                    at: path + "/pattern")
            }
            index[qa * width + qb] = index.count
            queue.append((qa, qb))
            next.append(Array(repeating: nil, count: classes.count))
            accepting.append(a.accepting[qa] && b.accepting[qb])
            return index.count - 1
        }
        _ = try state(0, 0)
        var k = 0
        while k < queue.count {
            let (qa, qb) = queue[k]
            for (c, (i, j)) in pairs.enumerated() {
                if let ta = a.next[qa][i], let tb = b.next[qb][j] { next[k][c] = try state(ta, tb) }
            }
            k += 1
        }
    }

    /// The rules for this automaton's strings of `minLength...maxLength` characters: a rule per
    /// (state, count) reachable from the start and able to reach an accepting end. Without a
    /// `maxLength`, counts stop at `minLength` (any longer string is as good).
    func counted(
        minLength: Int, maxLength: Int?, name: String, builder: inout GrammarBuilder, path: String
    ) throws -> GrammarExpression {
        let top = maxLength ?? minLength
        let width = top + 1
        func key(_ q: Int, _ c: Int) -> Int { q * width + c }
        func step(_ c: Int) -> Int? { maxLength == nil ? Swift.min(c + 1, top) : (c + 1 <= top ? c + 1 : nil) }
        // Forward: reachable pairs.
        var reached = Set([key(0, 0)])
        var order = [(0, 0)]
        var i = 0
        while i < order.count {
            let (q, c) = order[i]
            i += 1
            guard let c2 = step(c) else { continue }
            for t in next[q] {
                if let t, reached.insert(key(t, c2)).inserted {
                    order.append((t, c2))
                    guard order.count <= RegularExpression.maxBoundedRules else {
                        throw ConstraintError(
                            .tooComplex,
                            "bounding this pattern's length needs more than \(RegularExpression.maxBoundedRules) rules; put the length in the pattern",
                            at: path + "/maxLength")
                    }
                }
            }
        }
        // Backward: pairs from which an accepting end within the bounds is reachable.
        var live = Set(order.filter { accepting[$0.0] && $0.1 >= minLength }.map { key($0.0, $0.1) })
        var changed = true
        while changed {
            changed = false
            for (q, c) in order where !live.contains(key(q, c)) {
                guard let c2 = step(c) else { continue }
                if next[q].contains(where: { $0.map { live.contains(key($0, c2)) } ?? false }) {
                    live.insert(key(q, c))
                    changed = true
                }
            }
        }
        guard live.contains(key(0, 0)) else {
            throw ConstraintError(.unsatisfiable, "no string the pattern matches has a length within the bounds", at: path + "/maxLength")
        }
        let rule = { (q: Int, c: Int) in "\(name)_\(q)_\(c)" }
        if builder.contains(rule(0, 0)) { return .reference(rule(0, 0)) }
        // Each character class is one rule that every (state, count) refers to, so its
        // positions (and their token masks) are computed once, not once per count.
        var classRules: [Int: String] = [:]
        func classRule(_ k: Int) throws -> GrammarExpression {
            if let existing = classRules[k] { return .reference(existing) }
            let ruleName = "\(name)_class\(k)"
            try builder.define(ruleName, CharacterEncoding.jsonString.expression(classes[k]))
            classRules[k] = ruleName
            return .reference(ruleName)
        }
        for (q, c) in order where live.contains(key(q, c)) {
            var byTarget: [Int: [Int]] = [:]
            var targets: [Int] = []
            if let c2 = step(c) {
                for (cls, t) in next[q].enumerated() {
                    guard let t, live.contains(key(t, c2)) else { continue }
                    if byTarget[t] == nil { targets.append(t) }
                    byTarget[t, default: []].append(cls)
                }
            }
            var options: [GrammarExpression] = []
            if accepting[q] && c >= minLength { options.append(.empty) }
            for t in targets {
                let read = try (byTarget[t] ?? []).map(classRule)
                options.append(.sequence([read.count == 1 ? read[0] : .choice(read), .reference(rule(t, step(c) ?? c))]))
            }
            try builder.define(rule(q, c), options.count == 1 ? options[0] : .choice(options))
        }
        return .reference(rule(0, 0))
    }
}
