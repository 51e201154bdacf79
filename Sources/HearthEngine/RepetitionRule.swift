/// The repetition rule of constrained outputs (issue 59): a model that falls into a loop inside
/// an open string or array — the same n-gram again and again — is wound down like an answer that
/// runs out of tokens (``GenerationParameters/finishInBudget``, which turns both on and off).
///
/// The rule: when the generated tokens end with one n-gram of 1…``longestGram`` tokens repeated
/// so that the run covers at least ``shortestRun`` tokens and at least ``fewestRepeats``
/// repeats, the output must be complete within its shortest completion plus ``margin`` tokens:
/// from then on the sampler keeps only tokens after which the output can still be completed in
/// that budget (so the string or array closes, and so does every value around it, at the
/// first chance the model takes), and the reply ends `.stop` as soon as the output is complete.
/// A legitimate output rarely repeats one short n-gram 32 tokens in a row; one that does is in
/// the loop this ends. ``GenerationSummary/repetitionEnded`` says the rule acted.
package enum RepetitionRule {
    /// The longest n-gram looked for, in tokens.
    package static let longestGram = 16
    /// The fewest tokens a loop covers before the rule acts.
    package static let shortestRun = 32
    /// The fewest repeats of the n-gram.
    package static let fewestRepeats = 4
    /// Tokens beyond the shortest completion that the wound-down output may still take.
    package static let margin = 8

    /// Whether `tokens` (the generated ones) end in a loop: one n-gram repeated as above. At
    /// most ``longestGram`` passes over the last few dozen tokens, each stopping at the first
    /// difference.
    package static func isLooping(_ tokens: ArraySlice<Int32>) -> Bool {
        for n in 1...longestGram {
            let span = n * max(fewestRepeats, (shortestRun + n - 1) / n)
            guard span <= tokens.count else { continue }
            let start = tokens.endIndex - span
            var repeated = true
            for i in (start + n)..<tokens.endIndex where tokens[i] != tokens[i - n] {
                repeated = false
                break
            }
            if repeated { return true }
        }
        return false
    }
}
