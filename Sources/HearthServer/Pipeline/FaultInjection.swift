import Foundation
import Synchronization

/// Faults injected at the named stages of the generation pipeline, for the tests that check
/// each endpoint answers a failure at any stage in its API's own error shape
/// (`FaultInjectionTests`). Not settable from the command line: ``ServerOptions/faults`` is
/// `package`, and nil (no check at all) unless a test sets it.
package final class FaultInjector: Sendable {
    /// The stages of ``HearthServer``'s generation pipeline, in order.
    package enum Stage: String, Sendable, CaseIterable {
        /// The body parsed for its API and the model routed (`prepare`).
        case parse
        /// The request admitted to its route's pool (`admit`).
        case admit
        /// The route started: the prompt rendered, tokenized and admitted (`RouteStream.start`).
        case render
        /// The answer running: after its first generated token (`drive`).
        case run
        /// The answer settled: before its last event goes out (`drive`'s settlement).
        case settle
    }

    /// The error an armed stage throws.
    package struct Fault: Error, CustomStringConvertible {
        package let stage: Stage
        package var description: String { "a fault injected at the \(stage.rawValue) stage" }
    }

    private let armed = Mutex<Stage?>(nil)

    package init() {}

    /// Arms `stage` (nil: none): every request that reaches it fails there until disarmed.
    package func arm(_ stage: Stage?) { armed.withLock { $0 = stage } }

    /// Throws ``Fault`` when `stage` is armed.
    func check(_ stage: Stage) throws {
        if armed.withLock({ $0 }) == stage { throw Fault(stage: stage) }
    }
}

extension Optional where Wrapped == FaultInjector {
    /// Throws when a test armed `stage`; nothing without an injector.
    func check(_ stage: FaultInjector.Stage) throws { try self?.check(stage) }
}
