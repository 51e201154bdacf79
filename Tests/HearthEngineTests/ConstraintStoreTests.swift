import Foundation
import HearthConstraints
import HearthTestSupport
import Synchronization
import Testing

@testable import HearthEngine

/// The model's cache of compiled constraints: identical compiles asked for at once are done
/// once (every caller gets the same object), and a compile over the budget is refused and not
/// cached.
@Suite struct ConstraintStoreTests {
    @Test func concurrentIdenticalCompilesAreDoneOnce() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("gemma3-tiny").path)
        _ = model.constraintVocabulary  // built first, so the callers race on the compile alone
        let grammar = try GBNF.grammar(#"root ::= "{" [a-z]{200} ("," [0-9]{1,60})* "}""#)
        let results = Mutex<[ObjectIdentifier]>([])
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            if let compiled = try? model.compileConstraint(grammar) {
                results.withLock { $0.append(ObjectIdentifier(compiled)) }
            }
        }
        let ids = results.withLock { $0 }
        #expect(ids.count == 6)
        #expect(Set(ids).count == 1, "\(Set(ids).count) different compiles of one grammar")
    }

    @Test func overBudgetIsRefusedAndNotCached() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("gemma3-tiny").path)
        let grammar = try GBNF.grammar(#"root ::= [a-z]{3000}"#)
        var budget = CompileBudget.standard
        budget.maxPositions = 100
        #expect(throws: ConstraintError.self) { try model.compileConstraint(grammar, budget: budget) }
        _ = try model.compileConstraint(grammar)  // the failure was not cached
    }
}
