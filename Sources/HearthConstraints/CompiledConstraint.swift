/// A grammar compiled against a vocabulary: per grammar position, the tokens it allows, so a
/// step's mask is a union of precomputed sets plus a check of the few tokens that cross into the
/// enclosing rule. Immutable and shared; each sequence walks it with its own `ConstraintMatcher`.
///
/// Compiling walks the vocabulary trie once per position that consumes a byte. Walks are cheap
/// where few tokens fit (a property name, a digit), and positions inside fragments that recur
/// across grammars (a JSON string's body) are computed once per vocabulary and cached by the
/// fragment's structure.
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

    /// Fragments larger than this many symbols are not hashed for the shared cache (their
    /// positions are narrow in practice, and hashing them would cost more than the walk).
    static let signatureLimit = 512

    /// Compiles `grammar` for `vocabulary`.
    public init(_ grammar: Grammar, vocabulary: TokenVocabulary) {
        self.grammar = grammar
        self.vocabulary = vocabulary
        let program = Program(grammar)
        self.program = program
        let pool = ParserPool(program: program)
        var masks: [Int32: PositionMasks] = [:]
        var cached = 0
        for p in 0..<program.positionCount where program.kind[p] == Program.byteStep {
            let position = Int32(p)
            // Broad positions (many first bytes) are worth a cache lookup by structure.
            if program.bytes[p].count > 8, let key = CompiledConstraint.signature(program, position) {
                if let hit = vocabulary.cache.withLock({ $0[key] }) {
                    masks[position] = hit
                    cached += 1
                    continue
                }
                let computed = PositionMasks.compute(position: position, pool: pool, vocabulary: vocabulary)
                vocabulary.cache.withLock { $0[key] = computed }
                masks[position] = computed
            } else {
                masks[position] = PositionMasks.compute(position: position, pool: pool, vocabulary: vocabulary)
            }
        }
        self.masks = masks
        cachedPositions = cached
    }

    /// A canonical description of what can follow `position` inside its rule (the rest of its
    /// alternative and every rule reachable from it, renumbered in discovery order), or nil when
    /// that is larger than `signatureLimit` symbols.
    static func signature(_ program: Program, _ position: Int32) -> [UInt64]? {
        var out: [UInt64] = []
        var order: [Int32: UInt64] = [:]
        var queue: [Int32] = []
        func emit(_ p: Int) {
            let kind = program.kind[p]
            if kind == Program.byteStep {
                let s = program.bytes[p]
                out += [1, s.w0, s.w1, s.w2, s.w3]
            } else if kind == Program.end {
                out.append(2)
            } else {
                if order[kind] == nil {
                    order[kind] = UInt64(order.count)
                    queue.append(kind)
                }
                out += [3, order[kind] ?? 0, program.isLast[p] ? 1 : 0]
            }
        }
        var p = Int(position)
        while true {
            emit(p)
            if program.kind[p] == Program.end { break }
            p += 1
        }
        var q = 0
        while q < queue.count {
            let r = queue[q]
            q += 1
            out.append(4)
            for start in program.starts[Int(r)] {
                var p = Int(start)
                while true {
                    emit(p)
                    if program.kind[p] == Program.end { break }
                    p += 1
                }
                if out.count > signatureLimit * 6 { return nil }
            }
        }
        return out
    }
}
