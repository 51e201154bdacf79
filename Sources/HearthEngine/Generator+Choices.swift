import Foundation
import HearthConstraints
import HearthKernels
import HearthTokenizers

/// Several continuations of one prompt (OpenAI's `n`): one job leads and processes the prompt,
/// the others fork from its keys and values.
extension Generator {
    /// Streams a generation for `prompt`. Cancelling the consuming task or dropping the
    /// stream stops its work within one step (other sequences continue). `stop`, when set,
    /// ends the sequence the same way (checked between steps) but the stream still ends with
    /// `.done` (finish reason `cancelled`), so the consumer gets the summary.
    public func generate(
        prompt: [Int32], parameters: GenerationParameters, stop: CancellationFlag? = nil
    ) -> AsyncThrowingStream<GenerationEvent, Error> {
        let (stream, continuation) = AsyncThrowingStream<GenerationEvent, Error>.makeStream()
        let cancelled = CancellationFlag()
        continuation.onTermination = { _ in cancelled.set() }
        submitGroup(
            prompt: prompt, choices: [parameters], stops: [stop], cancelled: cancelled,
            emit: { continuation.yield($1) }, end: { continuation.finish(throwing: $0) })
        return stream
    }

    /// The most continuations one ``generate(prompt:choices:stops:)`` call may ask for.
    package static let maxChoices = 8

    /// Streams `choices.count` continuations of one prompt (OpenAI's `n`), each sampled with its
    /// own parameters (give each its own seed). The prompt is processed once: when its last
    /// position's logits are ready, every other choice copies the prompt's keys and values into
    /// a free slot and samples its first token from the same logits, then all decode together
    /// in the batch. A choice that finds no free slot waits for one and reuses the prompt held
    /// in the cache (recomputing only its last token). Each choice ends with its own `.done`;
    /// the stream finishes after the last one. `stops[i]` ends choice `i` as ``generate(prompt:parameters:stop:)``'s
    /// `stop` does; cancelling the consumer stops them all. A failure ends the whole stream.
    package func generate(
        prompt: [Int32], choices: [GenerationParameters], stops: [CancellationFlag?] = []
    ) -> AsyncThrowingStream<ChoiceEvent, Error> {
        let (stream, continuation) = AsyncThrowingStream<ChoiceEvent, Error>.makeStream()
        let cancelled = CancellationFlag()
        continuation.onTermination = { _ in cancelled.set() }
        submitGroup(
            prompt: prompt, choices: choices, stops: stops, cancelled: cancelled,
            emit: { continuation.yield(ChoiceEvent(choice: $0, event: $1)) }, end: { continuation.finish(throwing: $0) })
        return stream
    }

    /// Validates and submits one prompt's choices: the first leads (it processes the prompt),
    /// the others fork from it. `emit` gets every event with its choice; `end` is called once,
    /// with nil after the last choice's `.done` or with the first error.
    func submitGroup(
        prompt: [Int32], choices: [GenerationParameters], stops: [CancellationFlag?], cancelled: CancellationFlag,
        emit: @escaping (Int, GenerationEvent) -> Void, end: @escaping (Error?) -> Void
    ) {
        do {
            guard (1...Self.maxChoices).contains(choices.count) else {
                throw EngineError(.invalidOption, "choices must be between 1 and \(Self.maxChoices), got \(choices.count)")
            }
            for parameters in choices { try validate(prompt: prompt, parameters: parameters) }
        } catch {
            end(error)
            return
        }
        let remaining = ChoiceCountdown(choices.count)
        let jobs = choices.enumerated().map { index, parameters in
            let stop = index < stops.count ? stops[index] : nil
            return Job(
                prompt: prompt, parameters: parameters, tokenizer: model.tokenizer,
                isCancelled: { cancelled.isSet || stop?.isSet == true }, onToken: { emit(index, .token($0)) },
                onEnd: { result in
                    switch result {
                    case .success(let summary):
                        emit(index, .done(summary))
                        if remaining.endOne() { end(nil) }
                    case .failure(let error):
                        end(error)
                    }
                })
        }
        for fork in jobs.dropFirst() { fork.isFork = true }
        jobs[0].forks = Array(jobs.dropFirst())
        submit(jobs[0])
    }

    /// The leader of a group has processed the prompt (its slot holds the prompt's keys and
    /// values, then those of any tokens it drafted in the same step; `logits` are the prompt's
    /// last position's): each other choice takes a free slot, copies
    /// the prompt into it and samples its first token from the same logits. Choices that find no
    /// free slot wait at the head of the queue.
    func startForks(of leader: Job, logits: UnsafeBufferPointer<Float>) {
        var waiting: [Job] = []
        for fork in leader.forks {
            if fork.isCancelled() {
                fork.run.summary.finishReason = .cancelled
                fork.onEnd(.success(fork.run.finish()))
                continue
            }
            guard let s = idleSlot(for: fork.prompt) else {
                waiting.append(fork)
                continue
            }
            // The leader's slot just processed the prompt, so it can resume at its end; should it
            // not (nothing copied), the choice waits and is admitted like any request.
            guard decoder.cache.copyPrefix(from: leader.slot, to: s, count: fork.prompt.count) == fork.prompt.count else {
                slots[s].tokens = []
                waiting.append(fork)
                continue
            }
            slots[s].tokens = fork.prompt
            slots[s].busy = true
            touch(s)
            fork.slot = s
            fork.position = fork.prompt.count
            fork.ropeLength = fork.prompt.count
            fork.run.summary.cachedPromptTokens = fork.prompt.count
            fork.admitted = leader.admitted
            fork.prefilled = true
            active.append(fork)
            queue.lock()
            runningCount += 1
            queue.unlock()
            advance(fork, logits)
        }
        leader.forks = []
        requeue(waiting)
    }
}
