/// A context-free grammar over bytes: what a constraint compiles to.
///
/// Rule `root` derives the whole output. Each rule is a list of alternatives; each alternative
/// a sequence of symbols, each a set of bytes (one byte of output) or a reference to a rule.
/// Characters are UTF-8 byte sequences, so a character class is a choice of byte sequences and
/// a token that ends inside a character is handled like any other prefix. Built with
/// `GrammarBuilder`, which lowers repetition and nested choices into rules and checks the result.
public struct Grammar: Sendable, Hashable {
    /// One step of an alternative.
    public enum Symbol: Hashable, Sendable {
        /// One byte from the set.
        case bytes(ByteSet)
        /// Anything rule `index` derives.
        case rule(Int)
    }

    /// A named rule: a choice of sequences.
    public struct Rule: Hashable, Sendable {
        public var name: String
        public var alternatives: [[Symbol]]
    }

    /// The rules; `rules[root]` derives the whole output.
    public internal(set) var rules: [Rule]
    /// The index of the start rule.
    public internal(set) var root: Int

    /// Whether the grammar derives `bytes` exactly (a reference matcher for tests: an Earley
    /// recognizer, slow and simple).
    public func accepts(_ bytes: [UInt8]) -> Bool {
        struct Item: Hashable { var rule: Int, alt: Int, dot: Int, origin: Int }
        let nullable = self.nullable  // a fixpoint over all rules: computed once, not per item
        var sets: [Set<Item>] = Array(repeating: [], count: bytes.count + 1)
        var lists: [[Item]] = Array(repeating: [], count: bytes.count + 1)
        func add(_ item: Item, _ k: Int) {
            if sets[k].insert(item).inserted { lists[k].append(item) }
        }
        for a in rules[root].alternatives.indices { add(Item(rule: root, alt: a, dot: 0, origin: 0), 0) }
        for k in 0...bytes.count {
            var i = 0
            while i < lists[k].count {
                let item = lists[k][i]
                i += 1
                let alt = rules[item.rule].alternatives[item.alt]
                if item.dot == alt.count {
                    for parent in lists[item.origin] {
                        let pAlt = rules[parent.rule].alternatives[parent.alt]
                        if parent.dot < pAlt.count, case .rule(item.rule) = pAlt[parent.dot] {
                            add(Item(rule: parent.rule, alt: parent.alt, dot: parent.dot + 1, origin: parent.origin), k)
                        }
                    }
                    continue
                }
                switch alt[item.dot] {
                case .bytes(let set):
                    if k < bytes.count, set.contains(bytes[k]) {
                        add(Item(rule: item.rule, alt: item.alt, dot: item.dot + 1, origin: item.origin), k + 1)
                    }
                case .rule(let r):
                    for a in rules[r].alternatives.indices { add(Item(rule: r, alt: a, dot: 0, origin: k), k) }
                    // A nullable rule completed earlier in this set: advance over it now too.
                    if nullable[r] {
                        add(Item(rule: item.rule, alt: item.alt, dot: item.dot + 1, origin: item.origin), k)
                    }
                }
            }
        }
        return lists[bytes.count].contains { item in
            item.rule == root && item.origin == 0 && item.dot == rules[root].alternatives[item.alt].count
        }
    }

    /// Per rule: whether it derives the empty string.
    var nullable: [Bool] {
        var result = Array(repeating: false, count: rules.count)
        var changed = true
        while changed {
            changed = false
            for (r, rule) in rules.enumerated() where !result[r] {
                let derivesEmpty = rule.alternatives.contains { alt in
                    alt.allSatisfy { if case .rule(let s) = $0 { return result[s] } else { return false } }
                }
                if derivesEmpty { result[r] = true; changed = true }
            }
        }
        return result
    }

    /// The grammar in GBNF-like text (for errors and debugging).
    public var text: String {
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
