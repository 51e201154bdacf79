/// A context-free grammar over bytes: what a constraint compiles to.
///
/// Rule `root` derives the whole output. Each rule is a list of alternatives; each alternative
/// a sequence of symbols, each a set of bytes (one byte of output) or a reference to a rule.
/// Characters are UTF-8 byte sequences, so a character class is a choice of byte sequences and
/// a token that ends inside a character is handled like any other prefix. Built with
/// `GrammarBuilder`, which lowers repetition and nested choices into rules and checks the result.
package struct Grammar: Sendable, Hashable {
    /// One step of an alternative.
    package enum Symbol: Hashable, Sendable {
        /// One byte from the set.
        case bytes(ByteSet)
        /// Anything rule `index` derives.
        case rule(Int)
    }

    /// A named rule: a choice of sequences.
    package struct Rule: Hashable, Sendable {
        package var name: String
        package var alternatives: [[Symbol]]
    }

    /// The rules; `rules[root]` derives the whole output.
    package internal(set) var rules: [Rule]
    /// The index of the start rule.
    package internal(set) var root: Int

    /// Whether the grammar derives `bytes` exactly (a reference matcher for tests: an Earley
    /// recognizer, slow and simple, independent of the token-mask engine).
    package func accepts(_ bytes: [UInt8]) -> Bool {
        var chart = EarleyChart(self)
        for b in bytes where !chart.push(b) { return false }
        return chart.isComplete
    }

    /// Whether some output starts with `bytes` (Earley, like `accepts`).
    package func acceptsPrefix(_ bytes: [UInt8]) -> Bool {
        var chart = EarleyChart(self)
        for b in bytes where !chart.push(b) { return false }
        return true
    }

    /// Per rule: whether it derives the empty string.
    var nullable: [Bool] { GrammarChecks.derivable(rules) { _ in false } }

    /// The grammar in GBNF-like text (for errors and debugging).
    package var text: String {
        rules.map { rule in
            let alts = rule.alternatives.map { alt in
                alt.isEmpty ? "\"\"" : alt.map { symbol -> String in
                    switch symbol {
                    case .bytes(let set): return set.count == 1 ? "\\x\(set.description.dropFirst().dropLast())" : set.description
                    case .rule(let r): return rules[r].name
                    }
                }.joined(separator: " ")
            }
            return "\(rule.name) ::= " + alts.joined(separator: " | ")
        }.joined(separator: "\n")
    }
}

/// An Earley recognizer fed one byte at a time (the tests' reference; a value, so a chart can be
/// copied and continued). Every rule of a built grammar is productive, so a chart whose last set
/// is not empty is a viable prefix.
struct EarleyChart {
    struct Item: Hashable { var rule: Int, alt: Int, dot: Int, origin: Int }
    let grammar: Grammar
    let nullable: [Bool]
    private(set) var sets: [[Item]] = []

    init(_ grammar: Grammar) {
        self.grammar = grammar
        nullable = grammar.nullable
        let start = grammar.rules[grammar.root].alternatives.indices.map { Item(rule: grammar.root, alt: $0, dot: 0, origin: 0) }
        sets.append(close(start, at: 0))
    }

    /// Whether the root is complete at the end of what was pushed.
    var isComplete: Bool {
        sets[sets.count - 1].contains { item in
            item.rule == grammar.root && item.origin == 0 && item.dot == grammar.rules[grammar.root].alternatives[item.alt].count
        }
    }

    /// Scans `byte`; false (and unchanged) when no item accepts it.
    mutating func push(_ byte: UInt8) -> Bool {
        var scanned: [Item] = []
        for item in sets[sets.count - 1] {
            let alt = grammar.rules[item.rule].alternatives[item.alt]
            if item.dot < alt.count, case .bytes(let set) = alt[item.dot], set.contains(byte) {
                scanned.append(Item(rule: item.rule, alt: item.alt, dot: item.dot + 1, origin: item.origin))
            }
        }
        guard !scanned.isEmpty else { return false }
        sets.append(close(scanned, at: sets.count))
        return true
    }

    /// Prediction and completion within set `k`.
    private func close(_ seeds: [Item], at k: Int) -> [Item] {
        var list: [Item] = []
        var seen = Set<Item>()
        func add(_ item: Item) { if seen.insert(item).inserted { list.append(item) } }
        for item in seeds { add(item) }
        var i = 0
        while i < list.count {
            let item = list[i]
            i += 1
            let alt = grammar.rules[item.rule].alternatives[item.alt]
            if item.dot == alt.count {
                let origin = item.origin == k ? list : sets[item.origin]
                for parent in origin {
                    let pAlt = grammar.rules[parent.rule].alternatives[parent.alt]
                    if parent.dot < pAlt.count, case .rule(item.rule) = pAlt[parent.dot] {
                        add(Item(rule: parent.rule, alt: parent.alt, dot: parent.dot + 1, origin: parent.origin))
                    }
                }
                continue
            }
            if case .rule(let r) = alt[item.dot] {
                for a in grammar.rules[r].alternatives.indices { add(Item(rule: r, alt: a, dot: 0, origin: k)) }
                // A nullable rule may already have completed in this set: step over it too.
                if nullable[r] { add(Item(rule: item.rule, alt: item.alt, dot: item.dot + 1, origin: item.origin)) }
            }
        }
        return list
    }
}
