/// The state of one sequence under a constraint: which tokens may come next, and the step
/// taken by each chosen token.
///
/// Not thread-safe; one per sequence. Masks of states seen before are reused.
package struct ConstraintMatcher {
    /// The constraint it follows.
    package let constraint: CompiledConstraint
    private let pool: ParserPool
    private var state: Int32
    private var finished = false
    private var maskCache: [Int32: [UInt64]] = [:]
    private var cacheOrder: [Int32] = []
    /// Per state and per stack node: the fewest bytes to complete (-1: not known yet).
    private var stateDistance: [Int] = []
    private var returnMemo: [Int] = []

    /// States whose masks are kept (each is vocabulary/8 bytes: 32 KiB for 262k tokens).
    static let cachedMasks = 64

    /// A matcher at the start of the output.
    package init(_ constraint: CompiledConstraint) {
        self.constraint = constraint
        pool = ParserPool(program: constraint.program)
        var seeds: [Int32] = []
        let root = Int32(constraint.grammar.root)
        for start in constraint.program.starts[Int(root)] { seeds.append(pool.node(start, ParserPool.root)) }
        state = pool.closure(seeds)
    }

    /// Whether the output may end here (end-of-sequence is allowed).
    package var isAccepting: Bool { !finished && pool.accepting[Int(state)] }

    /// Whether nothing but the end may follow: the constrained output is complete.
    package var isComplete: Bool { finished || (pool.accepting[Int(state)] && pool.frontier[Int(state)].isEmpty) }

    /// Writes the allowed next tokens as bits (`mask[id >> 6] >> (id & 63) & 1`), one bit per
    /// vocabulary id.
    package mutating func fillMask(_ mask: inout [UInt64]) {
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
    package func allows(_ token: Int32) -> Bool {
        guard !finished, token >= 0, Int(token) < constraint.vocabulary.count else { return false }
        if constraint.vocabulary.endOfSequence.contains(token) { return pool.accepting[Int(state)] }
        let bytes = constraint.vocabulary.tokenBytes[Int(token)]
        return !bytes.isEmpty && pool.step(state, bytes) != ParserPool.dead
    }

    /// Takes `token`; returns false (and stays put) when the constraint does not allow it.
    @discardableResult
    package mutating func advance(_ token: Int32) -> Bool {
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

    // MARK: Finishing within a budget

    /// The fewest bytes that complete the output from here (0 when it may end now): the
    /// cheapest stack of the state, each frame the fewest bytes left in its alternative.
    package mutating func bytesToComplete() -> Int {
        guard !finished else { return 0 }
        return distance(state)
    }

    /// The fewest bytes from `state` to an accepting one (memoized per state and per stack node).
    private mutating func distance(_ state: Int32) -> Int {
        let s = Int(state)
        if s < stateDistance.count, stateDistance[s] >= 0 { return stateDistance[s] }
        var best = pool.accepting[s] ? 0 : Int.max
        if best > 0 {
            for n in pool.frontier[s] { best = min(best, nodeDistance(n)) }
        }
        if stateDistance.count <= s { stateDistance += repeatElement(-1, count: s + 1 - stateDistance.count) }
        stateDistance[s] = best
        return best
    }

    /// The fewest bytes to finish the stack whose top is `node` (at a byte-consuming position):
    /// the rest of its alternative, then the rest of each caller's.
    private mutating func nodeDistance(_ node: Int32) -> Int {
        let here = Int(constraint.remaining[Int(pool.nodePosition[Int(node)])])
        return min(Int(Int32.max), here + returnDistance(pool.nodeParent[Int(node)]))
    }

    /// The fewest bytes left once a call returns to `frame` (a node at its call site): the rest
    /// of the caller's alternative after the call, and so on to the root. Iterative over the
    /// frames, memoized per node.
    private mutating func returnDistance(_ frame: Int32) -> Int {
        var chain: [Int32] = []
        var f = frame
        var total = 0
        while f >= 0 {
            if Int(f) < returnMemo.count, returnMemo[Int(f)] >= 0 {
                total = returnMemo[Int(f)]
                break
            }
            chain.append(f)
            f = pool.nodeParent[Int(f)]
        }
        for g in chain.reversed() {
            let after = Int(pool.nodePosition[Int(g)]) + 1
            total = min(Int(Int32.max), total + (after < constraint.remaining.count ? Int(constraint.remaining[after]) : 0))
            if returnMemo.count <= Int(g) { returnMemo += repeatElement(-1, count: Int(g) + 1 - returnMemo.count) }
            returnMemo[Int(g)] = total
        }
        return total
    }

    /// The fewest bytes that complete the output after `token` (nil when the constraint does
    /// not allow it; 0 for the end of sequence where the output may end). The state is unchanged.
    package mutating func bytesToComplete(after token: Int32) -> Int? {
        guard !finished, token >= 0, Int(token) < constraint.vocabulary.count else { return nil }
        if constraint.vocabulary.endOfSequence.contains(token) { return pool.accepting[Int(state)] ? 0 : nil }
        let bytes = constraint.vocabulary.tokenBytes[Int(token)]
        guard !bytes.isEmpty else { return nil }
        let next = pool.step(state, bytes)
        return next == ParserPool.dead ? nil : distance(next)
    }

    /// Writes the allowed tokens after which the output can still be completed in at most
    /// `limit` bytes, and the end of sequence where the output may end: what a sequence may
    /// choose when its tokens are about to run out. Walks the vocabulary trie from the current
    /// state (subtrees the grammar refuses are skipped whole).
    package mutating func fillFeasibleMask(_ mask: inout [UInt64], within limit: Int) {
        let vocabulary = constraint.vocabulary
        let words = (vocabulary.count + 63) / 64
        if mask.count != words { mask = [UInt64](repeating: 0, count: words) } else {
            for i in mask.indices { mask[i] = 0 }
        }
        guard !finished else { return }
        if pool.accepting[Int(state)] {
            for id in vocabulary.endOfSequence { mask[Int(id) >> 6] |= 1 << UInt64(id & 63) }
        }
        let trie = vocabulary.trie
        var states = [Int32](repeating: state, count: 64)
        var i = 0
        while i < trie.byte.count {
            let d = Int(trie.depth[i])
            if states.count <= d { states.append(0) }
            let parent = d == 1 ? state : states[d - 1]
            let next = pool.step(parent, trie.byte[i])
            if next == ParserPool.dead {
                i = Int(trie.next[i])
                continue
            }
            states[d] = next
            let start = Int(trie.tokenStart[i]), end = Int(trie.tokenStart[i + 1])
            if start < end, distance(next) <= limit {
                for t in start..<end {
                    let id = trie.ids[t]
                    mask[Int(id) >> 6] |= 1 << UInt64(id & 63)
                }
            }
            i += 1
        }
    }

    /// Takes these bytes (text forced into the output, e.g. a prefix); false when not allowed.
    @discardableResult
    package mutating func advance(bytes: [UInt8]) -> Bool {
        guard !finished else { return false }
        let next = pool.step(state, bytes)
        guard next != ParserPool.dead else { return false }
        state = next
        return true
    }
}
