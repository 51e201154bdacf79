/// One top-level alternative of a pattern with its anchors taken off: `^` is supported only at
/// the start of the pattern or of a top-level alternative, `$` only at the end.
struct AnchoredBranch {
    /// The alternative's items, without the leading `^`s and trailing `$`s.
    var items: [RegexNode]
    /// Whether it began with `^` (with a search, no text may precede it).
    var anchoredStart: Bool
    /// Whether it ended with `$` (with a search, no text may follow it).
    var anchoredEnd: Bool
}

extension RegexNode {
    /// The top-level alternatives (the node itself when it is not an alternation), each with its
    /// anchors taken off. An anchor left inside an item is ``strayAnchor(start:offset:)``.
    var anchoredBranches: [AnchoredBranch] {
        let alternatives: [RegexNode]
        if case .alternation(let options) = self { alternatives = options } else { alternatives = [self] }
        return alternatives.map { branch in
            var items: [RegexNode]
            if case .sequence(let s) = branch { items = s } else { items = [branch] }
            var anchoredStart = false, anchoredEnd = false
            while case .anchor(true, _) = items.first { items.removeFirst(); anchoredStart = true }
            while case .anchor(false, _) = items.last { items.removeLast(); anchoredEnd = true }
            return AnchoredBranch(items: items, anchoredStart: anchoredStart, anchoredEnd: anchoredEnd)
        }
    }

    /// The error for an anchor anywhere but at the ends of the pattern or of a top-level alternative.
    static func strayAnchor(start: Bool, offset: Int) -> ConstraintError {
        ConstraintError(
            .unsupported,
            "'\(start ? "^" : "$")' is supported only at the \(start ? "start" : "end") of the pattern or of a top-level alternative",
            at: "offset \(offset)")
    }
}
