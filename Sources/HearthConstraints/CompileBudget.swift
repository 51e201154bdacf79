import Foundation

/// The most work and memory one constraint may cost to compile: a schema, pattern or grammar
/// over any of these bounds is refused with ``ConstraintError/Kind/tooComplex`` naming the
/// bound and the part of the constraint that went over it, before the work is done or as soon
/// as it passes the bound. A server compiles what clients send, so nothing a request holds may
/// make a compile run for minutes, take gigabytes, or recurse off the end of a thread's stack.
///
/// The defaults admit every schema of the committed corpus (the largest uses a few percent of
/// each) and the grammars people write by hand; docs/SERVER.md lists them.
public struct CompileBudget: Sendable, Hashable {
    /// Rules a GBNF grammar may define.
    public var maxRules: Int
    /// The longest chain of rule references a GBNF grammar may have (rule `a` refers to `b`,
    /// which refers to `c`, …; a recursive group of rules counts as its size).
    public var maxReferenceDepth: Int
    /// Grammar symbols after lowering (repetitions multiplied out): the size of the grammar.
    public var maxSymbols: Int
    /// Grammar positions that consume a byte, each of which gets a token mask.
    public var maxPositions: Int
    /// Steps spent keying positions for mask sharing (positions × bytes looked ahead).
    public var maxKeySteps: Int
    /// Bytes of token masks computed for one constraint (masks shared with earlier compiles
    /// are not counted again).
    public var maxMaskBytes: Int
    /// Parser states the mask computation may create.
    public var maxParserStates: Int
    /// Wall time for one compile, front end and masks each.
    public var timeLimit: Duration

    /// The budget every compile gets unless told otherwise.
    public static let standard = CompileBudget(
        maxRules: 4_096, maxReferenceDepth: 1_000, maxSymbols: 1_000_000, maxPositions: 250_000,
        maxKeySteps: 4_000_000, maxMaskBytes: 512 << 20, maxParserStates: 1_000_000, timeLimit: .seconds(10))

    /// A budget with these bounds.
    public init(
        maxRules: Int, maxReferenceDepth: Int, maxSymbols: Int, maxPositions: Int, maxKeySteps: Int, maxMaskBytes: Int,
        maxParserStates: Int, timeLimit: Duration
    ) {
        self.maxRules = maxRules
        self.maxReferenceDepth = maxReferenceDepth
        self.maxSymbols = maxSymbols
        self.maxPositions = maxPositions
        self.maxKeySteps = maxKeySteps
        self.maxMaskBytes = maxMaskBytes
        self.maxParserStates = maxParserStates
        self.timeLimit = timeLimit
    }
}

/// The clock of one compile: checked every so often in its loops, so a compile past its time
/// limit stops with `.tooComplex` instead of running on.
struct CompileClock {
    let limit: Duration
    let deadline: ContinuousClock.Instant
    private var ticks = 0

    init(_ limit: Duration) {
        self.limit = limit
        deadline = ContinuousClock.now.advanced(by: limit)
    }

    /// Throws once the time limit has passed (the clock is read on the first call and every
    /// 256th after it).
    mutating func check(_ location: @autoclosure () -> String) throws {
        ticks &+= 1
        guard ticks & 255 == 1 else { return }
        if ContinuousClock.now > deadline {
            throw ConstraintError(
                .tooComplex, "compiling the constraint took longer than its limit of \(Self.describe(limit))", at: location())
        }
    }

    static func describe(_ d: Duration) -> String {
        let seconds = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        return seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }
}
