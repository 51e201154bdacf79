/// A grammar expression: what the front ends (JSON Schema, regular expressions, GBNF) build.
package indirect enum GrammarExpression: Hashable, Sendable {
    /// One byte from the set.
    case bytes(ByteSet)
    /// Each in turn; empty is the empty string.
    case sequence([GrammarExpression])
    /// Any one of them; empty matches nothing.
    case choice([GrammarExpression])
    /// A named rule of the builder (recursion goes through names).
    case reference(String)
    /// `min` to `max` (nil: unbounded) repetitions.
    case repeating(GrammarExpression, min: Int, max: Int?)

    /// The empty string.
    package static let empty = GrammarExpression.sequence([])

    /// The UTF-8 bytes of `text`, in order.
    package static func literal(_ text: String) -> GrammarExpression { .byteString(Array(text.utf8)) }

    /// These bytes, in order.
    package static func byteString(_ bytes: [UInt8]) -> GrammarExpression {
        bytes.count == 1 ? .bytes(ByteSet(bytes[0])) : .sequence(bytes.map { .bytes(ByteSet($0)) })
    }

    /// `expression?`
    package static func optional(_ expression: GrammarExpression) -> GrammarExpression { .repeating(expression, min: 0, max: 1) }

    /// `expression*`
    package static func zeroOrMore(_ expression: GrammarExpression) -> GrammarExpression { .repeating(expression, min: 0, max: nil) }

    /// `expression+`
    package static func oneOrMore(_ expression: GrammarExpression) -> GrammarExpression { .repeating(expression, min: 1, max: nil) }
}

/// Collects named rules and lowers them into a checked `Grammar`.
///
/// Lowering keeps broad loops cheap to constrain: a repetition followed by more of the same
/// sequence (`"\"" char* "\""`) becomes a rule whose way out is the rest of the sequence
/// (`L ::= char L | "\""`), so the token masks precomputed for the loop see its closing byte
/// instead of leaving the rule after every character. Identical generated rules are shared.
package struct GrammarBuilder: Sendable {
    /// The largest repetition count a bounded repeat may have (`{m,n}`), and the most symbols
    /// a grammar may lower to; beyond these a constraint is `tooComplex`.
    package static let maxRepeat = 4096
    /// The default bound on symbols (``CompileBudget/maxSymbols`` of the standard budget).
    package static var maxSymbols: Int { CompileBudget.standard.maxSymbols }

    private var definitions: [(name: String, expression: GrammarExpression)] = []
    private var index: [String: Int] = [:]
    /// The bounds the build keeps to (symbols, time).
    package var budget: CompileBudget

    /// An empty builder that builds within `budget`.
    package init(budget: CompileBudget = .standard) { self.budget = budget }

    /// Whether a rule of this name is defined.
    package func contains(_ name: String) -> Bool { index[name] != nil }

    /// Defines rule `name`; a name defined twice is an error.
    package mutating func define(_ name: String, _ expression: GrammarExpression) throws {
        guard index[name] == nil else { throw ConstraintError(.invalidGrammar, "rule '\(name)' is defined twice", at: name) }
        index[name] = definitions.count
        definitions.append((name, expression))
    }

    /// Lowers every rule and checks the grammar from `root`: every referenced rule defined,
    /// no left recursion, and some output derivable (else `unsatisfiable`).
    package func build(root: String) throws -> Grammar {
        guard let rootIndex = index[root] else { throw ConstraintError(.invalidGrammar, "no rule named '\(root)'", at: root) }
        var lowering = Lowering(names: index, budget: budget)
        for (n, d) in definitions.enumerated() {
            try lowering.clock.check(d.name)
            lowering.rules[n].name = d.name
            lowering.rules[n].alternatives = try lowering.alternatives(d.expression, context: d.name)
        }
        return try GrammarChecks.finish(rules: lowering.rules, root: rootIndex, clock: &lowering.clock)
    }
}

/// GrammarExpression → rules.
private struct Lowering {
    var rules: [Grammar.Rule]
    let names: [String: Int]
    var shared: [[[Grammar.Symbol]]: Int] = [:]
    var loops: [LoopKey: Int] = [:]

    struct LoopKey: Hashable {
        var item: [Grammar.Symbol]
        var exit: [Grammar.Symbol]
    }
    var symbols = 0
    let maxSymbols: Int
    var clock: CompileClock

    init(names: [String: Int], budget: CompileBudget) {
        self.names = names
        maxSymbols = budget.maxSymbols
        clock = CompileClock(budget.timeLimit)
        rules = Array(repeating: Grammar.Rule(name: "", alternatives: []), count: names.count)
    }

    func tooLarge(_ context: String) -> ConstraintError {
        ConstraintError(.tooComplex, "the grammar is larger than \(maxSymbols) symbols (the compile budget)", at: context)
    }

    mutating func alternatives(_ e: GrammarExpression, context: String) throws -> [[Grammar.Symbol]] {
        if case .choice(let options) = e {
            var result: [[Grammar.Symbol]] = []
            for option in options { result += try alternatives(option, context: context) }
            return result
        }
        return [try sequence(e, context: context)]
    }

    /// A rule for these alternatives (shared with an identical one made before).
    mutating func rule(_ alts: [[Grammar.Symbol]], context: String) throws -> Int {
        if let existing = shared[alts] { return existing }
        symbols += alts.reduce(1) { $0 + $1.count }
        guard symbols <= maxSymbols else { throw tooLarge(context) }
        try clock.check(context)
        rules.append(Grammar.Rule(name: "\(context)_\(rules.count)", alternatives: alts))
        shared[alts] = rules.count - 1
        return rules.count - 1
    }

    /// Symbols for `e` used inline: a one-alternative expression stays inline, anything else
    /// becomes a rule reference.
    mutating func inline(_ e: GrammarExpression, context: String) throws -> [Grammar.Symbol] {
        let alts = try alternatives(e, context: context)
        if alts.count == 1 { return alts[0] }
        return [.rule(try rule(alts, context: context))]
    }

    mutating func sequence(_ e: GrammarExpression, context: String) throws -> [Grammar.Symbol] {
        switch e {
        case .bytes(let set):
            return [.bytes(set)]
        case .reference(let name):
            guard let r = names[name] else {
                throw ConstraintError(.invalidGrammar, "rule '\(name)' is used but not defined", at: context)
            }
            return [.rule(r)]
        case .choice:
            return [.rule(try rule(try alternatives(e, context: context), context: context))]
        case .repeating(let body, let min, let max):
            return try repetition(body, min: min, max: max, then: [], context: context)
        case .sequence(let items):
            // A loop's way out is the rest of its sequence (see the type's comment). The items
            // up to the first loop with something after it are lowered in order; the rest from
            // the end, so each loop's exit is ready when it is reached (no recursion per loop).
            func isLoop(_ i: Int) -> Bool {
                if case .repeating(_, let min, let max) = items[i], max != min, i + 1 < items.count { return true }
                return false
            }
            var result: [Grammar.Symbol] = []
            let firstLoop = items.indices.first(where: isLoop) ?? items.count
            for item in items[..<firstLoop] { result += try sequence(item, context: context) }
            guard firstLoop < items.count else { return result }
            var pieces: [[Grammar.Symbol]] = []  // what follows, last piece first
            for i in stride(from: items.count - 1, through: firstLoop, by: -1) {
                if isLoop(i), case .repeating(let body, let min, let max) = items[i] {
                    let rest = Array(pieces.reversed().joined())
                    let exit = rest.count <= 4 ? rest : [.rule(try rule([rest], context: context))]
                    pieces = [try repetition(body, min: min, max: max, then: exit, context: context)]
                } else {
                    pieces.append(try sequence(items[i], context: context))
                }
            }
            return result + pieces.reversed().joined()
        }
    }

    /// `body{min,max}` followed by `then`.
    mutating func repetition(
        _ body: GrammarExpression, min: Int, max: Int?, then exit: [Grammar.Symbol], context: String
    ) throws -> [Grammar.Symbol] {
        guard min >= 0, min <= GrammarBuilder.maxRepeat, (max ?? min) >= min, (max ?? 0) <= GrammarBuilder.maxRepeat else {
            if let max, max < min {
                throw ConstraintError(.unsatisfiable, "repetition {\(min),\(max)}: the minimum exceeds the maximum", at: context)
            }
            throw ConstraintError(.tooComplex, "repetition counts above \(GrammarBuilder.maxRepeat) are not supported", at: context)
        }
        // The loop's alternatives carry the body's alternatives directly (`L ::= a L | b L | exit`)
        // rather than a rule for the body, which would be left after every item.
        let bodyAlternatives = try alternatives(body, context: context)
        let item = bodyAlternatives.count == 1 ? bodyAlternatives[0] : [.rule(try rule(bodyAlternatives, context: context))]
        // The `min` copies are inlined: count them before building them, so `(a{4096}){4096}`
        // is refused instead of allocated.
        let itemSize = bodyAlternatives.reduce(0) { $0 + $1.count + 1 }
        let (copies, overflow) = itemSize.multipliedReportingOverflow(by: Swift.max(min, max ?? min))
        guard !overflow, symbols + copies <= maxSymbols else { throw tooLarge(context) }
        symbols += itemSize * min
        // What follows the `min` copies: optional copies (L0 ::= exit; Lk ::= body L(k-1) | exit,
        // innermost first), or a loop (L ::= body L | exit), or just the exit.
        var tail: [Grammar.Symbol]
        if let max {
            tail = exit
            if max > min {
                var next = try rule([exit], context: context)
                for _ in 0..<(max - min) {
                    next = try rule(bodyAlternatives.map { $0 + [.rule(next)] } + [exit], context: context)
                }
                tail = [.rule(next)]
            }
        } else {
            // A loop is determined by its body and exit, so identical loops share one rule
            // (a placeholder index first, since L refers to itself).
            let key = LoopKey(item: item, exit: exit)
            if let existing = loops[key] {
                tail = [.rule(existing)]
            } else {
                let placeholder = rules.count
                loops[key] = placeholder
                rules.append(Grammar.Rule(name: "\(context)_\(placeholder)", alternatives: []))
                rules[placeholder].alternatives = bodyAlternatives.map { $0 + [.rule(placeholder)] } + [exit]
                symbols += bodyAlternatives.reduce(exit.count + 2) { $0 + $1.count + 1 }
                tail = [.rule(placeholder)]
            }
        }
        let literalBody = bodyAlternatives.count == 1
            && bodyAlternatives[0].allSatisfy { if case .bytes = $0 { return true } else { return false } }
        if literalBody {
            var result: [Grammar.Symbol] = []
            for _ in 0..<min { result += item }
            return result + tail
        }
        // A body of several alternatives or rules: the required copies are a chain of rules too
        // (Mk ::= body M(k-1)), so no copy is a rule left after one item (a character rule is
        // inlined into each link).
        guard min > 0 else { return tail }
        var next = tail.count == 1 && { if case .rule = tail[0] { return true } else { return false } }()
            ? tail : [.rule(try rule([tail], context: context))]
        for _ in 0..<min {
            next = [.rule(try rule(bodyAlternatives.map { $0 + next }, context: context))]
        }
        return next
    }
}

/// The checks and clean-up every grammar gets before use. Every walk here is iterative and
/// linear (or bounded per rule) in the size of the grammar: a grammar is client input, and a
/// chain of 40,000 rules must cost no more stack than one rule.
enum GrammarChecks {
    static func finish(rules input: [Grammar.Rule], root: Int, clock: inout CompileClock) throws -> Grammar {
        var rules = input
        // Productive rules: some alternative made only of non-empty byte sets and productive rules.
        let productive = derivable(rules) { set in !set.isEmpty }
        guard productive[root] else {
            throw ConstraintError(.unsatisfiable, "the constraint accepts no output at all", at: rules[root].name)
        }
        for r in rules.indices {
            rules[r].alternatives.removeAll { alt in
                !alt.allSatisfy {
                    switch $0 {
                    case .bytes(let s): return !s.isEmpty
                    case .rule(let r): return productive[r]
                    }
                }
            }
        }
        try clock.check(rules[root].name)
        rules = inlineSmallRules(rules, root: root)
        try clock.check(rules[root].name)

        // Keep what the root reaches, renumbered with the root first.
        var order = [root]
        var newIndex = Array(repeating: -1, count: rules.count)
        newIndex[root] = 0
        var i = 0
        while i < order.count {
            for alt in rules[order[i]].alternatives {
                for case .rule(let r) in alt where newIndex[r] < 0 {
                    newIndex[r] = order.count
                    order.append(r)
                }
            }
            i += 1
        }
        let kept = order.map { r in
            Grammar.Rule(
                name: rules[r].name,
                alternatives: rules[r].alternatives.map { alt in
                    alt.map { if case .rule(let s) = $0 { return .rule(newIndex[s]) } else { return $0 } }
                })
        }
        let grammar = Grammar(rules: kept, root: 0)
        try checkLeftRecursion(grammar)
        return grammar
    }

    /// Per rule: whether it derives some string made of byte sets that pass `usable` — every
    /// set non-empty gives the productive rules; no set at all gives the nullable ones. A
    /// worklist: each alternative counts the references it still waits for, and a rule found
    /// derivable wakes the alternatives that use it (linear in the grammar's size).
    static func derivable(_ rules: [Grammar.Rule], usable: (ByteSet) -> Bool) -> [Bool] {
        var result = Array(repeating: false, count: rules.count)
        var waiting: [[Int]] = []  // per rule, per alternative: references not yet derivable
        var users = Array(repeating: [(rule: Int, alt: Int)](), count: rules.count)
        var work: [Int] = []
        for (r, rule) in rules.enumerated() {
            var counts: [Int] = []
            for (a, alt) in rule.alternatives.enumerated() {
                var count = 0
                var blocked = false
                for symbol in alt {
                    switch symbol {
                    case .bytes(let set): if !usable(set) { blocked = true }
                    case .rule(let s):
                        count += 1
                        users[s].append((r, a))
                    }
                }
                // A blocked alternative waits forever.
                counts.append(blocked ? Int.max : count)
                if !blocked && count == 0 && !result[r] {
                    result[r] = true
                    work.append(r)
                }
            }
            waiting.append(counts)
        }
        while let s = work.popLast() {
            for (r, a) in users[s] where waiting[r][a] != Int.max {
                waiting[r][a] -= 1
                if waiting[r][a] == 0 && !result[r] {
                    result[r] = true
                    work.append(r)
                }
            }
        }
        return result
    }

    /// Replaces references to character-like rules by their byte sequences
    /// (`x ::= a C b`, `C ::= [c] | [d][e]` → `x ::= a [c] b | a [d][e] b`). The token masks of a position are
    /// precomputed within its rule, and leaving a rule makes tokens depend on the caller: a
    /// character class lowered to a rule of UTF-8 sequences, referenced from a string's loop,
    /// would otherwise be left after every character. Callers grow to at most 64 alternatives.
    static func inlineSmallRules(_ input: [Grammar.Rule], root: Int) -> [Grammar.Rule] {
        var rules = input
        // Rules grouped by strongly connected components, a rule's references in earlier
        // components (or its own); a group of more than one rule, or one that refers to itself, is
        // recursive.
        let reaches = rules.map { rule in rule.alternatives.flatMap { alt in alt.compactMap { if case .rule(let s) = $0 { s } else { nil } } } }
        let components = StronglyConnected(reaches)
        // Character-like rules only: a finite language of short byte strings (a UTF-8 class, a
        // JSON string's character with its escapes), flattened to at most 64 byte sequences of
        // at most 12 bytes. Those are what a loop would leave after each character; other rules
        // keep their frames (fewer positions to precompute). Rules are flattened in component
        // order, so what a rule refers to is flattened (or found not flat) before it.
        var flat = [[[Grammar.Symbol]]?](repeating: nil, count: rules.count)
        for r in components.order where !components.recursive[r] && r != root {
            flat[r] = flatten(rules[r], flat)
        }
        for r in rules.indices {
            guard rules[r].alternatives.contains(where: { alt in alt.contains { if case .rule(let s) = $0 { flat[s] != nil } else { false } } })
            else { continue }
            // Every reference to a flat rule expanded in one pass; the rule is kept as it is
            // when that would give it more than 64 alternatives.
            var expanded: [[Grammar.Symbol]] = []
            var fits = true
            for alt in rules[r].alternatives where fits {
                var partial: [[Grammar.Symbol]] = [[]]
                for symbol in alt {
                    if case .rule(let s) = symbol, let f = flat[s] {
                        partial = partial.flatMap { head in f.map { head + $0 } }
                    } else {
                        for k in partial.indices { partial[k].append(symbol) }
                    }
                    if expanded.count + partial.count > 64 {
                        fits = false
                        break
                    }
                }
                expanded += partial
            }
            if fits { rules[r].alternatives = expanded }
        }
        return rules
    }

    /// A rule's alternatives as at most 64 byte sequences of at most 12 bytes, given the flat
    /// forms of the rules it refers to; nil when it has no such form.
    private static func flatten(_ rule: Grammar.Rule, _ flat: [[[Grammar.Symbol]]?]) -> [[Grammar.Symbol]]? {
        var result: [[Grammar.Symbol]] = []
        for alt in rule.alternatives {
            var partial: [[Grammar.Symbol]] = [[]]
            for symbol in alt {
                let options: [[Grammar.Symbol]]
                switch symbol {
                case .bytes: options = [[symbol]]
                case .rule(let t):
                    guard let f = flat[t] else { return nil }
                    options = f
                }
                partial = partial.flatMap { head in options.map { head + $0 } }
                guard partial.count <= 64, partial.allSatisfy({ $0.count <= 12 }) else { return nil }
            }
            result += partial
            guard result.count <= 64 else { return nil }
        }
        return result
    }

    /// A rule that can reach itself without consuming a byte would make the parser's stack grow
    /// forever; such grammars are refused (rewrite `a ::= a "x" | "y"` as `a ::= "y" "x"*`).
    static func checkLeftRecursion(_ g: Grammar) throws {
        let nullable = g.nullable
        // Edges: rule → rules it may start with (after nullable prefixes).
        var edges = Array(repeating: [Int](), count: g.rules.count)
        for (r, rule) in g.rules.enumerated() {
            for alt in rule.alternatives {
                for symbol in alt {
                    guard case .rule(let s) = symbol else { break }
                    edges[r].append(s)
                    if !nullable[s] { break }
                }
            }
        }
        // Depth-first search for a cycle (0 new, 1 on the path, 2 done).
        var mark = Array(repeating: 0, count: g.rules.count)
        for start in g.rules.indices where mark[start] == 0 {
            var stack: [(rule: Int, next: Int)] = [(start, 0)]
            mark[start] = 1
            while let top = stack.last {
                if top.next < edges[top.rule].count {
                    stack[stack.count - 1].next += 1
                    let s = edges[top.rule][top.next]
                    if mark[s] == 1 {
                        throw ConstraintError(
                            .invalidGrammar, "rule '\(g.rules[s].name)' is left-recursive (it can reach itself before any output)",
                            at: g.rules[s].name)
                    }
                    if mark[s] == 0 {
                        mark[s] = 1
                        stack.append((s, 0))
                    }
                } else {
                    mark[top.rule] = 2
                    stack.removeLast()
                }
            }
        }
    }
}

/// The strongly connected components of a directed graph (Tarjan's algorithm, iterative, linear
/// in the edges), with what grammar checks need of them.
struct StronglyConnected {
    /// Per node: its component, numbered in the order found — a component's successors are
    /// found before it, so every edge leads to the same or a smaller number.
    var component: [Int]
    /// The nodes in the order their components were found (successors first).
    var order: [Int]
    /// Per node: whether it can reach itself (a component of several nodes, or a self edge).
    var recursive: [Bool]
    /// Per component: its size.
    var sizes: [Int]

    init(_ edges: [[Int]]) {
        let n = edges.count
        var index = Array(repeating: -1, count: n), low = Array(repeating: 0, count: n)
        var onStack = Array(repeating: false, count: n)
        var stack: [Int] = []
        var counter = 0
        component = Array(repeating: -1, count: n)
        order = []
        order.reserveCapacity(n)
        recursive = Array(repeating: false, count: n)
        sizes = []
        for root in 0..<n where index[root] < 0 {
            var frames: [(node: Int, next: Int)] = [(root, 0)]
            index[root] = counter; low[root] = counter; counter += 1
            stack.append(root); onStack[root] = true
            while let frame = frames.last {
                let v = frame.node
                if frame.next < edges[v].count {
                    frames[frames.count - 1].next += 1
                    let w = edges[v][frame.next]
                    if index[w] < 0 {
                        index[w] = counter; low[w] = counter; counter += 1
                        stack.append(w); onStack[w] = true
                        frames.append((w, 0))
                    } else if onStack[w] {
                        low[v] = min(low[v], index[w])
                    }
                    continue
                }
                frames.removeLast()
                if let parent = frames.last { low[parent.node] = min(low[parent.node], low[v]) }
                if low[v] == index[v] {
                    let c = sizes.count
                    var size = 0
                    while let w = stack.popLast() {
                        onStack[w] = false
                        component[w] = c
                        order.append(w)
                        size += 1
                        if w == v { break }
                    }
                    sizes.append(size)
                    if size > 1 || edges[v].contains(v) {
                        for w in order[(order.count - size)...] { recursive[w] = true }
                    }
                }
            }
        }
    }

    /// The longest chain of references from each node: the most nodes on a path, a component
    /// counting as all its nodes (so a chain through a recursive group is as long as the group).
    func longestChains(_ edges: [[Int]]) -> [Int] {
        var longest = Array(repeating: 0, count: sizes.count)  // per component
        // Components in the order found: successors come first.
        var members = Array(repeating: [Int](), count: sizes.count)
        for v in order { members[component[v]].append(v) }
        for c in 0..<sizes.count {
            var below = 0
            for v in members[c] {
                for w in edges[v] where component[w] != c { below = max(below, longest[component[w]]) }
            }
            longest[c] = sizes[c] + below
        }
        return component.map { longest[$0] }
    }
}
