/// The state of one sequence under a constraint: which tokens may come next, and the step
/// taken by each chosen token.
///
/// Not thread-safe; one per sequence. Masks of states seen before are reused.
public struct ConstraintMatcher {
    /// The constraint it follows.
    public let constraint: CompiledConstraint
    private let pool: ParserPool
    private var state: Int32
    private var finished = false
    private var maskCache: [Int32: [UInt64]] = [:]
    private var cacheOrder: [Int32] = []

    /// States whose masks are kept (each is vocabulary/8 bytes: 32 KiB for 262k tokens).
    static let cachedMasks = 64

    /// A matcher at the start of the output.
    public init(_ constraint: CompiledConstraint) {
        self.constraint = constraint
        pool = ParserPool(program: constraint.program)
        var seeds: [Int32] = []
        let root = Int32(constraint.grammar.root)
        for start in constraint.program.starts[Int(root)] { seeds.append(pool.node(start, ParserPool.root)) }
        state = pool.closure(seeds)
    }

    /// Whether the output may end here (end-of-sequence is allowed).
    public var isAccepting: Bool { !finished && pool.accepting[Int(state)] }

    /// Whether nothing but the end may follow: the constrained output is complete.
    public var isComplete: Bool { finished || (pool.accepting[Int(state)] && pool.frontier[Int(state)].isEmpty) }

    /// Writes the allowed next tokens as bits (`mask[id >> 6] >> (id & 63) & 1`), one bit per
    /// vocabulary id.
    public mutating func fillMask(_ mask: inout [UInt64]) {
        let words = (constraint.vocabulary.count + 63) / 64
        if let hit = maskCache[state] {
            mask = hit
            return
        }
        if mask.count != words { mask = [UInt64](repeating: 0, count: words) } else {
            for i in mask.indices { mask[i] = 0 }
        }
        guard !finished else { return }
        let s = Int(state)
        if pool.accepting[s] {
            for id in constraint.vocabulary.endOfSequence { mask[Int(id) >> 6] |= 1 << UInt64(id & 63) }
        }
        var seenPositions = Set<Int32>()
        for n in pool.frontier[s] {
            let p = pool.nodePosition[Int(n)]
            guard let masks = constraint.masks[p] else { continue }
            if seenPositions.insert(p).inserted { masks.accepted.add(to: &mask) }
            let parent = pool.nodeParent[Int(n)]
            // Tokens that leave the position's rule: their rest must fit the real context.
            guard !masks.suffixes.isEmpty || !masks.exitRoots.isEmpty, parent != ParserPool.root else { continue }
            let after = pool.closure([pool.node(pool.nodePosition[Int(parent)] + 1, pool.nodeParent[Int(parent)])])
            masks.addLeaving(from: after, pool: pool, vocabulary: constraint.vocabulary, to: &mask)
        }
        if maskCache.count >= ConstraintMatcher.cachedMasks, let oldest = cacheOrder.first {
            maskCache[oldest] = nil
            cacheOrder.removeFirst()
        }
        maskCache[state] = mask
        cacheOrder.append(state)
    }

    /// Whether `token` is allowed next.
    public func allows(_ token: Int32) -> Bool {
        guard !finished, token >= 0, Int(token) < constraint.vocabulary.count else { return false }
        if constraint.vocabulary.endOfSequence.contains(token) { return pool.accepting[Int(state)] }
        let bytes = constraint.vocabulary.tokenBytes[Int(token)]
        return !bytes.isEmpty && pool.step(state, bytes) != ParserPool.dead
    }

    /// Takes `token`; returns false (and stays put) when the constraint does not allow it.
    @discardableResult
    public mutating func advance(_ token: Int32) -> Bool {
        guard !finished, token >= 0, Int(token) < constraint.vocabulary.count else { return false }
        if constraint.vocabulary.endOfSequence.contains(token) {
            guard pool.accepting[Int(state)] else { return false }
            finished = true
            return true
        }
        let bytes = constraint.vocabulary.tokenBytes[Int(token)]
        guard !bytes.isEmpty else { return false }
        let next = pool.step(state, bytes)
        guard next != ParserPool.dead else { return false }
        state = next
        return true
    }

    /// Takes these bytes (text forced into the output, e.g. a prefix); false when not allowed.
    @discardableResult
    public mutating func advance(bytes: [UInt8]) -> Bool {
        guard !finished else { return false }
        let next = pool.step(state, bytes)
        guard next != ParserPool.dead else { return false }
        state = next
        return true
    }
}
