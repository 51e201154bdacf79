/// A grammar compiled against a vocabulary: per grammar position, the tokens it allows, so a
/// step's mask is a union of precomputed sets plus a check of the few tokens that cross into the
/// enclosing rule. Immutable and shared; each sequence walks it with its own `ConstraintMatcher`.
///
/// Compiling walks the vocabulary trie once per distinct position that consumes a byte. Walks
/// are cheap where few tokens fit (a property name, a digit); positions that behave alike for
/// as many bytes as the longest token (a JSON string's body in every schema, the copies of a
/// bounded repeat) share one walk, cached per vocabulary by a structural key.
public final class CompiledConstraint: Sendable {
    /// The grammar it enforces.
    public let grammar: Grammar
    /// The vocabulary its masks are over.
    public let vocabulary: TokenVocabulary
    let program: Program
    /// Per position (only byte-consuming positions have an entry).
    let masks: [Int32: PositionMasks]

    /// Positions whose masks came from the vocabulary's cache (for figures and tests).
    public let cachedPositions: Int

    /// Compiles `grammar` for `vocabulary`.
    public init(_ grammar: Grammar, vocabulary: TokenVocabulary) {
        self.grammar = grammar
        self.vocabulary = vocabulary
        let program = Program(grammar)
        self.program = program
        let pool = ParserPool(program: program)
        var keys = FragmentKeys(program: program, budget: vocabulary.longestToken)
        var masks: [Int32: PositionMasks] = [:]
        var local: [FragmentKey: PositionMasks] = [:]
        var cached = 0
        for p in 0..<program.positionCount where program.kind[p] == Program.byteStep {
            let position = Int32(p)
            // Positions whose next `longestToken` bytes behave alike share their masks: within a
            // grammar (the copies of a bounded repeat) and across grammars (a JSON string's body).
            let key = keys.key(position)
            if let hit = local[key] {
                masks[position] = hit
                continue
            }
            if let hit = vocabulary.cache.withLock({ $0[key] }) {
                masks[position] = hit
                local[key] = hit
                cached += 1
                continue
            }
            let computed = PositionMasks.compute(position: position, pool: pool, vocabulary: vocabulary)
            vocabulary.cache.withLock { cache in
                if cache.count >= TokenVocabulary.cacheLimit { cache.removeAll(keepingCapacity: true) }
                cache[key] = computed
            }
            masks[position] = computed
            local[key] = computed
        }
        self.masks = masks
        cachedPositions = cached
    }
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
/// schemas has the same key in each. Memoized per (position, budget) and (rule, budget).
struct FragmentKeys {
    let program: Program
    let budget: Int
    /// Per rule: the fewest bytes it derives.
    let minimumLength: [Int]
    private var sequenceMemo: [Int: FragmentKey] = [:]
    private var ruleMemo: [Int: FragmentKey] = [:]

    static let cut = FragmentKey(a: 0x6375_7421, b: 0x21)
    static let end = FragmentKey(a: 0x656E_6421, b: 0x42)

    init(program: Program, budget: Int) {
        self.program = program
        self.budget = max(1, budget)
        // Fixpoint: a rule's minimum is its cheapest alternative.
        let unbounded = 1 << 40  // no finite derivation found yet (saturating, never overflows)
        var minimum = Array(repeating: unbounded, count: program.starts.count)
        var changed = true
        while changed {
            changed = false
            for r in program.starts.indices {
                for start in program.starts[r] {
                    var total = 0
                    var p = Int(start)
                    while program.kind[p] != Program.end {
                        total = min(unbounded, total + (program.kind[p] == Program.byteStep ? 1 : minimum[Int(program.kind[p])]))
                        p += 1
                    }
                    if total < minimum[r] {
                        minimum[r] = total
                        changed = true
                    }
                }
            }
        }
        minimumLength = minimum
    }

    mutating func key(_ position: Int32) -> FragmentKey { sequence(Int(position), budget) }

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

    /// The continuation from position `p` with `left` bytes to look at.
    private mutating func sequence(_ p: Int, _ left: Int) -> FragmentKey {
        if left <= 0 { return FragmentKeys.cut }
        let memo = p &* (budget + 1) &+ left
        if let hit = sequenceMemo[memo] { return hit }
        let kind = program.kind[p]
        let result: FragmentKey
        if kind == Program.end {
            result = FragmentKeys.end
        } else if kind == Program.byteStep {
            let s = program.bytes[p]
            result = FragmentKeys.combine(1, [FragmentKey(a: s.w0, b: s.w1), FragmentKey(a: s.w2, b: s.w3), sequence(p + 1, left - 1)])
        } else {
            let r = Int(kind)
            result = FragmentKeys.combine(3, [rule(r, left), sequence(p + 1, left - minimumLength[r])])
        }
        sequenceMemo[memo] = result
        return result
    }

    private mutating func rule(_ r: Int, _ left: Int) -> FragmentKey {
        let memo = r &* (budget + 1) &+ left
        if let hit = ruleMemo[memo] { return hit }
        let parts = program.starts[r].map { sequence(Int($0), left) }
        let result = FragmentKeys.combine(4, parts)
        ruleMemo[memo] = result
        return result
    }
}
