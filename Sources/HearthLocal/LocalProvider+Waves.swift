import Foundation
import HearthEngine

/// A request's choices (OpenAI's `n`) in waves of at most `parallel` sequences, each wave after
/// a turn of its own: `n` choices take `n` slots, and a request cannot hold more slots than the
/// model has while its other choices wait in the engine's queue ahead of other clients.
extension LocalProvider {
    /// One event of one choice of ``choiceWaves(_:prompt:choices:stops:wave:turn:admission:)``,
    /// `choice` counted over all the waves.
    struct WaveEvent: Sendable {
        var choice: Int
        var event: GenerationEvent
    }

    /// The admission a request holds now (given back once, at the latest when the request ends).
    final class HeldTurn: @unchecked Sendable {
        // `@unchecked Sendable`: `release` is only touched under `lock`.
        private let lock = NSLock()
        private var release: (@Sendable () -> Void)?

        init(_ release: (@Sendable () -> Void)?) { self.release = release }

        /// Gives the turn back (later calls do nothing until ``hold(_:)``).
        func end() {
            let pending: (@Sendable () -> Void)? = lock.withLock {
                defer { release = nil }
                return release
            }
            pending?()
        }

        /// Holds the next turn.
        func hold(_ next: (@Sendable () -> Void)?) {
            let previous: (@Sendable () -> Void)? = lock.withLock {
                defer { release = next }
                return release
            }
            previous?()
        }
    }

    /// Streams `choices` of one prompt in waves of `wave` (the first `wave` run under `turn`,
    /// already held; before each later wave the last turn is given back and `admission` asked
    /// again for as many slots as the wave has — so other clients' requests waiting for a turn go
    /// between the waves). A later wave reuses the prompt the model's cache holds (only its
    /// last token is recomputed). Cancelling the consumer stops the current wave.
    func choiceWaves(
        _ generator: Generator, prompt: [Int32], choices: [GenerationParameters], stops: [CancellationFlag], wave: Int,
        turn: HeldTurn, admission: Admission?
    ) -> AsyncThrowingStream<WaveEvent, Error> {
        let wave = max(1, wave)
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    var start = 0
                    while start < choices.count {
                        try Task.checkCancellation()  // a cancelled wave's stream just ends
                        let end = min(choices.count, start + wave)
                        if start > 0 {
                            turn.end()
                            turn.hold(try await admission?(end - start))
                            try Task.checkCancellation()
                        }
                        let waveStops: [CancellationFlag?] = Array(stops[start..<end])
                        for try await item in generator.generate(prompt: prompt, choices: Array(choices[start..<end]), stops: waveStops) {
                            continuation.yield(WaveEvent(choice: start + item.choice, event: item.event))
                        }
                        start = end
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
