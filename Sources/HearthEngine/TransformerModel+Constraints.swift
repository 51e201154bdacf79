import HearthConstraints
import HearthTokenizers
import Foundation
import Synchronization

extension TransformerModel {
    /// The model's vocabulary for structured output: each token's output bytes (special tokens
    /// excluded) and the end-of-sequence ids. Built on first use (~0.1–0.3 s for 262k tokens).
    package var constraintVocabulary: TokenVocabulary {
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

    /// `grammar` compiled against this model's vocabulary, for `GenerationParameters.constraint`,
    /// within `budget`. Compiled constraints are cached by grammar (the most recent, up to
    /// ``ConstraintStore/capacityBytes``); a grammar being compiled for another caller is
    /// compiled once, the second caller waiting for the first's result.
    /// - Throws: `ConstraintError` `.tooComplex` when the compile goes over `budget`.
    package func compileConstraint(_ grammar: Grammar, budget: CompileBudget = .standard) throws -> CompiledConstraint {
        let vocabulary = constraintVocabulary
        return try constraintStore.compiled(grammar) { try CompiledConstraint(grammar, vocabulary: vocabulary, budget: budget) }
    }
}

/// The lazily built vocabulary and a cache of compiled constraints bounded in bytes (safe to
/// share: both live behind a mutex; a compile runs outside it, and a grammar already being
/// compiled is waited for rather than compiled twice).
final class ConstraintStore: Sendable {
    /// The most bytes of compiled constraints kept (their own masks and programs).
    static let capacityBytes = 256 << 20

    private struct State {
        var vocabulary: TokenVocabulary?
        var compiled: [Grammar: CompiledConstraint] = [:]
        var order: [Grammar] = []
        var bytes = 0
        var inFlight: [Grammar: Pending] = [:]
    }

    /// A compile under way: its result once done, for the callers waiting on it.
    private final class Pending: @unchecked Sendable {
        // `@unchecked Sendable`: `result` is only touched under `condition`'s lock.
        let condition = NSCondition()
        var result: Result<CompiledConstraint, any Error>?

        func wait() throws -> CompiledConstraint {
            condition.lock()
            defer { condition.unlock() }
            while true {
                if let result { return try result.get() }
                condition.wait()
            }
        }

        func finish(_ outcome: Result<CompiledConstraint, any Error>) {
            condition.lock()
            result = outcome
            condition.broadcast()
            condition.unlock()
        }
    }

    private let state = Mutex<State>(State())
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

    func compiled(_ grammar: Grammar, _ make: () throws -> CompiledConstraint) throws -> CompiledConstraint {
        enum Step { case hit(CompiledConstraint), wait(Pending), build(Pending) }
        let step: Step = state.withLock { s in
            if let hit = s.compiled[grammar] { return .hit(hit) }
            if let pending = s.inFlight[grammar] { return .wait(pending) }
            let pending = Pending()
            s.inFlight[grammar] = pending
            return .build(pending)
        }
        switch step {
        case .hit(let hit): return hit
        case .wait(let pending): return try pending.wait()
        case .build(let pending):
            let outcome = Result { try make() }
            state.withLock { s in
                s.inFlight[grammar] = nil
                if case .success(let made) = outcome, made.byteSize <= Self.capacityBytes, s.compiled[grammar] == nil {
                    s.compiled[grammar] = made
                    s.order.append(grammar)
                    s.bytes += made.byteSize
                    while s.bytes > Self.capacityBytes, !s.order.isEmpty {
                        let oldest = s.order.removeFirst()
                        s.bytes -= s.compiled.removeValue(forKey: oldest)?.byteSize ?? 0
                    }
                }
            }
            pending.finish(outcome)
            return try outcome.get()
        }
    }
}
