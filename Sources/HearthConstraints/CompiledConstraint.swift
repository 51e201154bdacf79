/// A grammar compiled against a vocabulary: per grammar position, the tokens it allows, so a
/// step's mask is a union of precomputed sets plus a check of the few tokens that cross into the
/// enclosing rule. Immutable and shared; each sequence walks it with its own `ConstraintMatcher`.
///
/// Compiling walks the vocabulary trie once per distinct position that consumes a byte. Walks
/// are cheap where few tokens fit (a property name, a digit); positions that behave alike for
/// as many bytes as the longest token (a JSON string's body in every schema, the copies of a
/// bounded repeat) share one walk, cached per vocabulary by a structural key.
package final class CompiledConstraint: Sendable {
    /// The grammar it enforces.
    package let grammar: Grammar
    /// The vocabulary its masks are over.
    package let vocabulary: TokenVocabulary
    let program: Program
    /// Per position (only byte-consuming positions have an entry).
    let masks: [Int32: PositionMasks]

    /// Positions whose masks came from the vocabulary's cache (for figures and tests).
    package let cachedPositions: Int

    /// Compiles `grammar` for `vocabulary` within `budget` (positions, keying steps, mask
    /// bytes, parser states, time).
    /// - Throws: `ConstraintError` `.tooComplex` naming the bound and the rule at which the
    ///   compile went over it.
    package init(_ grammar: Grammar, vocabulary: TokenVocabulary, budget: CompileBudget = .standard) throws {
        self.grammar = grammar
        self.vocabulary = vocabulary
        let program = Program(grammar)
        self.program = program
        func ruleName(_ p: Int) -> String {
            let r = Int(program.rule[p])
            return grammar.rules.indices.contains(r) ? grammar.rules[r].name : ""
        }
        let byteSteps = program.kind.reduce(0) { $0 + ($1 == Program.byteStep ? 1 : 0) }
        guard byteSteps <= budget.maxPositions else {
            throw ConstraintError(
                .tooComplex,
                "the constraint has \(byteSteps) byte positions; the compile budget allows \(budget.maxPositions)",
                at: grammar.rules[grammar.root].name)
        }
        var clock = CompileClock(budget.timeLimit)
        let pool = ParserPool(program: program)
        var keys = FragmentKeys(program: program, budget: vocabulary.longestToken, maxSteps: budget.maxKeySteps)
        var masks: [Int32: PositionMasks] = [:]
        var local: [FragmentKey: PositionMasks] = [:]
        var cached = 0
        var maskBytes = 0
        for p in 0..<program.positionCount where program.kind[p] == Program.byteStep {
            let position = Int32(p)
            try clock.check(ruleName(p))
            // Positions whose next `longestToken` bytes behave alike share their masks: within a
            // grammar (the copies of a bounded repeat) and across grammars (a JSON string's body).
            let key: FragmentKey
            do { key = try keys.key(position) } catch let e as ConstraintError { throw ConstraintError(e.kind, e.message, at: ruleName(p)) }
            if let hit = local[key] {
                masks[position] = hit
                continue
            }
            if let hit = vocabulary.cachedMasks(key) {
                masks[position] = hit
                local[key] = hit
                cached += 1
                continue
            }
            let computed = try PositionMasks.compute(
                position: position, pool: pool, vocabulary: vocabulary, maxStates: budget.maxParserStates, where: ruleName(p))
            maskBytes += computed.byteSize
            guard maskBytes <= budget.maxMaskBytes else {
                throw ConstraintError(
                    .tooComplex, "the constraint's token masks take more than \(budget.maxMaskBytes >> 20) MiB (the compile budget)",
                    at: ruleName(p))
            }
            vocabulary.cacheMasks(computed, for: key)
            masks[position] = computed
            local[key] = computed
        }
        self.masks = masks
        cachedPositions = cached
        remaining = Self.remainingBytes(program, minimum: keys.minimumLength)
        byteSize = maskBytes + program.positionCount * 56 + masks.count * 24
    }

    /// Per position: the fewest bytes from it to the end of its alternative (its own byte, if
    /// it consumes one, included), from each rule's fewest bytes: what ``ConstraintMatcher``
    /// adds up along a stack to know how far the output is from complete.
    let remaining: [Int32]

    static func remainingBytes(_ program: Program, minimum: [Int]) -> [Int32] {
        var result = [Int32](repeating: 0, count: program.positionCount)
        var p = program.positionCount - 1
        var after = 0
        while p >= 0 {
            let kind = program.kind[p]
            if kind == Program.end {
                after = 0
            } else if kind == Program.byteStep {
                after += 1
            } else {
                after += minimum[Int(kind)]
            }
            result[p] = Int32(clamping: after)
            p -= 1
        }
        return result
    }

    /// Roughly how many bytes the compiled constraint holds (its own masks and program; masks
    /// it shares with the vocabulary's cache are counted there too).
    package let byteSize: Int
}

/// A 128-bit structural hash of what a grammar fragment does within a number of bytes.
struct FragmentKey: Hashable, Sendable {
    var a: UInt64
    var b: UInt64
}

/// Keys of positions: two positions with equal keys accept the same byte strings up to
/// `budget` bytes and leave their rule at the same points, so they have the same token masks
/// (no token is longer than the budget). The key hashes the position's continuation in its
/// rule and the rules it references, unrolled until the budget is spent: the copies of a bounded
/// repeat more than a token away from its end share one key, and a fragment that recurs across
/// schemas has the same key in each. Memoized per (position, budget) and (rule, budget), and
/// evaluated with an explicit stack: a chain of rules that each begin with the next is as
/// deep as it is long, and a grammar comes from a client.
struct FragmentKeys {
    let program: Program
    let budget: Int
    /// Per rule: the fewest bytes it derives.
    let minimumLength: [Int]
    private var sequenceMemo: [Int: FragmentKey] = [:]
    private var ruleMemo: [Int: FragmentKey] = [:]
    /// Keys evaluated so far, and the most allowed.
    private(set) var steps = 0
    let maxSteps: Int

    static let cut = FragmentKey(a: 0x6375_7421, b: 0x21)
    static let end = FragmentKey(a: 0x656E_6421, b: 0x42)

    init(program: Program, budget: Int, maxSteps: Int = CompileBudget.standard.maxKeySteps) {
        self.program = program
        self.budget = max(1, budget)
        self.maxSteps = maxSteps
        minimumLength = Self.minimumLengths(program)
    }

    /// Per rule, the fewest bytes it derives (1 << 40 when it derives nothing finite). Knuth's
    /// generalisation of Dijkstra's algorithm: rules are settled cheapest first, and an
    /// alternative is a candidate for its rule once every rule it refers to is settled — each
    /// reference is looked at once, whatever order the rules are written in.
    static func minimumLengths(_ program: Program) -> [Int] {
        let unbounded = 1 << 40
        let rules = program.starts.count
        var minimum = Array(repeating: unbounded, count: rules)
        var settled = Array(repeating: false, count: rules)
        // Per alternative (rule, first position): bytes so far and references not yet settled.
        var altRule: [Int] = [], altBytes: [Int] = [], altWaiting: [Int] = []
        var users = Array(repeating: [Int](), count: rules)  // rule → alternatives referring to it, once per reference
        var heap = MinHeap()
        for r in 0..<rules {
            for start in program.starts[r] {
                let a = altRule.count
                var bytes = 0, waiting = 0
                var p = Int(start)
                while program.kind[p] != Program.end {
                    if program.kind[p] == Program.byteStep {
                        bytes += 1
                    } else {
                        waiting += 1
                        users[Int(program.kind[p])].append(a)
                    }
                    p += 1
                }
                altRule.append(r); altBytes.append(bytes); altWaiting.append(waiting)
                if waiting == 0 { heap.push(bytes, r) }
            }
        }
        while let (length, r) = heap.pop() {
            guard !settled[r] else { continue }
            settled[r] = true
            minimum[r] = length
            for a in users[r] {
                altBytes[a] = min(unbounded, altBytes[a] + length)
                altWaiting[a] -= 1
                if altWaiting[a] == 0 && !settled[altRule[a]] { heap.push(altBytes[a], altRule[a]) }
            }
        }
        return minimum
    }

    /// The key of position `position`.
    /// - Throws: `ConstraintError` `.tooComplex` past `maxSteps` keys.
    mutating func key(_ position: Int32) throws -> FragmentKey {
        let root = Node.sequence(Int(position), budget)
        if let done = memo(root) { return done }
        var stack: [Node] = [root]
        while let top = stack.last {
            if memo(top) != nil {
                stack.removeLast()
                continue
            }
            let children = self.children(top)
            var ready = true
            for child in children where memo(child) == nil {
                stack.append(child)
                ready = false
            }
            guard ready else {
                guard stack.count <= maxSteps else { throw overBudget() }
                continue
            }
            stack.removeLast()
            steps += 1
            guard steps <= maxSteps else { throw overBudget() }
            evaluate(top, children)
        }
        return memo(root) ?? FragmentKeys.cut
    }

    private func overBudget() -> ConstraintError {
        ConstraintError(.tooComplex, "keying the constraint's positions took more than \(maxSteps) steps (the compile budget)")
    }

    /// A continuation from position p with `left` bytes to look at, or a rule's alternatives.
    private enum Node {
        case sequence(Int, Int)
        case rule(Int, Int)
    }

    /// The memoized key, or the key a trivial node has, or nil when not evaluated yet.
    private func memo(_ node: Node) -> FragmentKey? {
        switch node {
        case .sequence(let p, let left):
            if left <= 0 { return FragmentKeys.cut }
            if program.kind[p] == Program.end { return FragmentKeys.end }
            return sequenceMemo[p &* (budget + 1) &+ left]
        case .rule(let r, let left):
            return ruleMemo[r &* (budget + 1) &+ left]
        }
    }

    private func children(_ node: Node) -> [Node] {
        switch node {
        case .sequence(let p, let left):
            let kind = program.kind[p]
            if kind == Program.byteStep { return [.sequence(p + 1, left - 1)] }
            let r = Int(kind)
            return [.rule(r, left), .sequence(p + 1, left - minimumLength[r])]
        case .rule(let r, let left):
            return program.starts[r].map { .sequence(Int($0), left) }
        }
    }

    private mutating func evaluate(_ node: Node, _ children: [Node]) {
        let parts = children.map { memo($0) ?? FragmentKeys.cut }
        switch node {
        case .sequence(let p, let left):
            let result: FragmentKey
            if program.kind[p] == Program.byteStep {
                let s = program.bytes[p]
                result = FragmentKeys.combine(1, [FragmentKey(a: s.w0, b: s.w1), FragmentKey(a: s.w2, b: s.w3)] + parts)
            } else {
                result = FragmentKeys.combine(3, parts)
            }
            sequenceMemo[p &* (budget + 1) &+ left] = result
        case .rule(let r, let left):
            ruleMemo[r &* (budget + 1) &+ left] = FragmentKeys.combine(4, parts)
        }
    }

    private static func mix(_ h: FragmentKey, _ value: UInt64) -> FragmentKey {
        func round(_ x: UInt64, _ seed: UInt64) -> UInt64 {
            var z = x &+ seed &+ 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return FragmentKey(a: round(h.a ^ value, 0x51ED_2701), b: round(h.b &+ value &* 0x2545_F491_4F6C_DD1D, 0x7F4A_7C15))
    }

    private static func combine(_ tag: UInt64, _ parts: [FragmentKey]) -> FragmentKey {
        var h = FragmentKey(a: tag, b: ~tag)
        for p in parts { h = mix(mix(h, p.a), p.b) }
        return mix(h, UInt64(parts.count))
    }
}

/// A binary min-heap of (length, rule) pairs, for ``FragmentKeys/minimumLengths(_:)``.
struct MinHeap {
    private var items: [(Int, Int)] = []

    mutating func push(_ length: Int, _ rule: Int) {
        items.append((length, rule))
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard items[i].0 < items[parent].0 else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() -> (Int, Int)? {
        guard let first = items.first else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var smallest = i
                if l < items.count && items[l].0 < items[smallest].0 { smallest = l }
                if r < items.count && items[r].0 < items[smallest].0 { smallest = r }
                guard smallest != i else { break }
                items.swapAt(i, smallest)
                i = smallest
            }
        }
        return first
    }
}
