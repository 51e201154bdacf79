/// The grammar flattened into positions (rule, alternative, dot), what the parser stacks hold.
struct Program: Sendable {
    static let end: Int32 = -2
    static let byteStep: Int32 = -1

    /// Per position: `byteStep`, `end`, or the index of the rule referenced at the dot.
    var kind: [Int32] = []
    /// Per position: the bytes it consumes (when `kind == byteStep`).
    var bytes: [ByteSet] = []
    /// Per position: whether the symbol at the dot is the last of its alternative (a rule
    /// referenced there is a tail call: its frame replaces the caller's).
    var isLast: [Bool] = []
    /// Per position: its rule.
    var rule: [Int32] = []
    /// Per rule: the first position of each alternative.
    var starts: [[Int32]] = []

    init(_ grammar: Grammar) {
        for (r, rule) in grammar.rules.enumerated() {
            var ruleStarts: [Int32] = []
            for alt in rule.alternatives {
                ruleStarts.append(Int32(kind.count))
                for (d, symbol) in alt.enumerated() {
                    switch symbol {
                    case .bytes(let set):
                        kind.append(Program.byteStep)
                        bytes.append(set)
                    case .rule(let s):
                        kind.append(Int32(s))
                        bytes.append(ByteSet())
                    }
                    isLast.append(d == alt.count - 1)
                    self.rule.append(Int32(r))
                }
                kind.append(Program.end)
                bytes.append(ByteSet())
                isLast.append(false)
                self.rule.append(Int32(r))
            }
            starts.append(ruleStarts)
        }
    }

    var positionCount: Int { kind.count }
}

/// Parser stacks and parser states, interned, with a lazily built byte transition table: the
/// set of stacks the grammar allows after some bytes is a state of a DFA built on demand, so
/// consuming a byte that was seen before in the same state is one table read.
///
/// A stack is a node (position, parent node); `root` as parent means the whole output is
/// complete when the position's rule completes, `bottom` means "left the fragment being
/// analysed" (used when precomputing a position's token masks). Not thread-safe: each matcher
/// owns one, and a compiled constraint uses one while it is built.
final class ParserPool {
    static let root: Int32 = -1
    static let bottom: Int32 = -2
    static let dead: Int32 = 0

    let program: Program
    private(set) var nodePosition: [Int32] = []
    private(set) var nodeParent: [Int32] = []
    private var nodeIndex: [UInt64: Int32] = [:]

    /// Per state: frontier stack nodes (positions that consume a byte), sorted.
    private(set) var frontier: [[Int32]] = []
    /// Per state: the output may end here (a stack reached `root`).
    private(set) var accepting: [Bool] = []
    /// Per state: some stack left the fragment (reached `bottom`).
    private(set) var exited: [Bool] = []
    private var stateIndex: [StateKey: Int32] = [:]
    /// `transitions[state * 256 + byte]`: the next state, or -1 when not computed yet.
    var transitions: [Int32] = []

    private struct StateKey: Hashable {
        var nodes: [Int32]
        var accepting: Bool
        var exited: Bool
    }

    init(program: Program) {
        self.program = program
        _ = intern(StateKey(nodes: [], accepting: false, exited: false))  // state 0: dead
    }

    var stateCount: Int { frontier.count }

    func node(_ position: Int32, _ parent: Int32) -> Int32 {
        let key = UInt64(UInt32(bitPattern: position)) << 32 | UInt64(UInt32(bitPattern: parent))
        if let found = nodeIndex[key] { return found }
        let id = Int32(nodePosition.count)
        nodePosition.append(position)
        nodeParent.append(parent)
        nodeIndex[key] = id
        return id
    }

    private func intern(_ key: StateKey) -> Int32 {
        if let found = stateIndex[key] { return found }
        let id = Int32(frontier.count)
        frontier.append(key.nodes)
        accepting.append(key.accepting)
        exited.append(key.exited)
        transitions.append(contentsOf: repeatElement(-1, count: 256))
        stateIndex[key] = id
        return id
    }

    /// The state of these stacks after expanding rule references and completed rules.
    func closure(_ seeds: [Int32]) -> Int32 {
        var work = seeds
        var seen = Set<Int32>()
        var result: [Int32] = []
        var accept = false, exit = false
        while let n = work.popLast() {
            guard seen.insert(n).inserted else { continue }
            let p = Int(nodePosition[Int(n)])
            let kind = program.kind[p]
            if kind == Program.byteStep {
                result.append(n)
            } else if kind == Program.end {
                let parent = nodeParent[Int(n)]
                if parent == ParserPool.root {
                    accept = true
                } else if parent == ParserPool.bottom {
                    exit = true
                } else {
                    work.append(node(nodePosition[Int(parent)] + 1, nodeParent[Int(parent)]))
                }
            } else {
                let callerFrame = program.isLast[p] ? nodeParent[Int(n)] : n
                for start in program.starts[Int(kind)] { work.append(node(start, callerFrame)) }
            }
        }
        result.sort()
        if result.isEmpty && !accept && !exit { return ParserPool.dead }
        return intern(StateKey(nodes: result, accepting: accept, exited: exit))
    }

    /// The state after `byte` (one table read once computed).
    @inline(__always)
    func step(_ state: Int32, _ byte: UInt8) -> Int32 {
        let cached = transitions[Int(state) &* 256 &+ Int(byte)]
        if cached >= 0 { return cached }
        return computeStep(state, byte)
    }

    private func computeStep(_ state: Int32, _ byte: UInt8) -> Int32 {
        var seeds: [Int32] = []
        for n in frontier[Int(state)] {
            let p = nodePosition[Int(n)]
            if program.bytes[Int(p)].contains(byte) { seeds.append(node(p + 1, nodeParent[Int(n)])) }
        }
        let next = seeds.isEmpty ? ParserPool.dead : closure(seeds)
        transitions[Int(state) &* 256 &+ Int(byte)] = next
        return next
    }

    /// The state after `bytes`, or dead.
    func step(_ state: Int32, _ bytes: [UInt8]) -> Int32 {
        var s = state
        for b in bytes {
            s = step(s, b)
            if s == ParserPool.dead { return s }
        }
        return s
    }
}
