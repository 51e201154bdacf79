/// Facts about expressions the front ends need before handing them to the builder: whether an
/// expression matches the empty string (a loop over such a body would be left-recursive), its
/// non-empty part, and a size estimate to refuse blow-ups early.
extension GrammarExpression {
    /// Whether the expression matches the empty string (references count as non-empty: the
    /// front ends only reference rules that consume at least one byte, except `ws`, which they
    /// never repeat).
    var isNullable: Bool {
        switch self {
        case .bytes: return false
        case .sequence(let items): return items.allSatisfy(\.isNullable)
        case .choice(let options): return options.contains(where: \.isNullable)
        case .reference: return false
        case .repeating(let body, let min, _): return min == 0 || body.isNullable
        }
    }

    /// Whether the expression matches nothing at all (an empty choice somewhere unavoidable).
    var isEmptyLanguage: Bool {
        switch self {
        case .bytes(let set): return set.isEmpty
        case .sequence(let items): return items.contains(where: \.isEmptyLanguage)
        case .choice(let options): return options.allSatisfy(\.isEmptyLanguage)
        case .reference: return false
        case .repeating(let body, let min, let max): return min > 0 && body.isEmptyLanguage || (max ?? 1) < min
        }
    }

    /// The same language without the empty string (`nil` when only the empty string remains).
    var withoutEmpty: GrammarExpression? {
        guard isNullable else { return self }
        switch self {
        case .bytes, .reference:
            return self
        case .choice(let options):
            let parts = options.compactMap(\.withoutEmpty)
            return parts.isEmpty ? nil : (parts.count == 1 ? parts[0] : .choice(parts))
        case .sequence(let items):
            // Every item is nullable: some item i is the first to consume, the rest are as they are.
            var parts: [GrammarExpression] = []
            for (i, item) in items.enumerated() {
                guard let first = item.withoutEmpty else { continue }
                parts.append(.sequence([first] + items[(i + 1)...]))
            }
            return parts.isEmpty ? nil : (parts.count == 1 ? parts[0] : .choice(parts))
        case .repeating(let body, _, let max):
            // body{min,max} with a nullable body or min 0, minus "": one to max non-empty bodies.
            guard let nonEmpty = body.withoutEmpty, max != 0 else { return nil }
            return .repeating(nonEmpty, min: 1, max: max)
        }
    }

    /// `body{min,max}` with a body that may match the empty string rewritten so the loop body
    /// always consumes (`(a*)*` → `a*`): the builder refuses loops that can spin without output.
    static func safeRepeat(_ body: GrammarExpression, min: Int, max: Int?) -> GrammarExpression {
        guard body.isNullable else { return .repeating(body, min: min, max: max) }
        guard let nonEmpty = body.withoutEmpty else { return .empty }
        if max == 0 { return .empty }
        return .repeating(nonEmpty, min: 0, max: max)
    }

    /// Roughly how many symbols the expression lowers to (repetitions multiplied out), saturating.
    var estimatedSize: Int {
        switch self {
        case .bytes, .reference: return 1
        case .sequence(let items): return items.reduce(0) { saturatingAdd($0, $1.estimatedSize) }
        case .choice(let options): return options.reduce(1) { saturatingAdd($0, $1.estimatedSize) }
        case .repeating(let body, let min, let max):
            let copies = Swift.max(max ?? (min + 1), 1)
            let (product, overflow) = body.estimatedSize.multipliedReportingOverflow(by: copies)
            return overflow ? Int.max : product
        }
    }
}

private func saturatingAdd(_ a: Int, _ b: Int) -> Int {
    let (sum, overflow) = a.addingReportingOverflow(b)
    return overflow ? Int.max : sum
}
