import HearthConstraints
import HearthTokenizers
import Synchronization

extension LanguageModel {
    /// The model's vocabulary for structured output: each token's output bytes (special tokens
    /// excluded) and the end-of-sequence ids. Built on first use (~0.1–0.3 s for 262k tokens).
    public var constraintVocabulary: TokenVocabulary {
        constraintStore.vocabulary {
            let count = max(options.vocabSize, tokenizer.vocabularySize)
            var tokens: [[UInt8]?] = []
            tokens.reserveCapacity(count)
            for id in 0..<count {
                let id32 = Int32(id)
                if id >= tokenizer.vocabularySize || tokenizer.isSpecial(id32) || eosIDs.contains(id32) {
                    tokens.append(nil)
                } else {
                    tokens.append(tokenizer.bytes(of: id32))
                }
            }
            return TokenVocabulary(tokens: tokens, endOfSequence: eosIDs.sorted())
        }
    }

    /// `grammar` compiled against this model's vocabulary, for `GenerationParameters.constraint`.
    /// Compiled constraints are cached by grammar (the most recent `ConstraintStore.capacity`).
    public func compileConstraint(_ grammar: Grammar) -> CompiledConstraint {
        let vocabulary = constraintVocabulary
        return constraintStore.compiled(grammar) { CompiledConstraint(grammar, vocabulary: vocabulary) }
    }
}

/// The lazily built vocabulary and a small cache of compiled constraints (safe to share: both
/// live behind a mutex; a compile runs outside it).
final class ConstraintStore: Sendable {
    static let capacity = 32
    private let state = Mutex<(vocabulary: TokenVocabulary?, compiled: [Grammar: CompiledConstraint], order: [Grammar])>(
        (nil, [:], []))
    private let building = Mutex<Void>(())

    func vocabulary(_ make: () -> TokenVocabulary) -> TokenVocabulary {
        if let built = state.withLock({ $0.vocabulary }) { return built }
        // One builder at a time; the others wait for its result.
        return building.withLock { _ in
            if let built = state.withLock({ $0.vocabulary }) { return built }
            let made = make()
            state.withLock { $0.vocabulary = made }
            return made
        }
    }

    func compiled(_ grammar: Grammar, _ make: () -> CompiledConstraint) -> CompiledConstraint {
        if let hit = state.withLock({ $0.compiled[grammar] }) { return hit }
        let made = make()
        state.withLock { s in
            if s.compiled[grammar] == nil {
                s.compiled[grammar] = made
                s.order.append(grammar)
                if s.order.count > ConstraintStore.capacity { s.compiled[s.order.removeFirst()] = nil }
            }
        }
        return made
    }
}
