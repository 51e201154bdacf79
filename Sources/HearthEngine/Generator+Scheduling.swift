import Foundation
import HearthConstraints
import HearthKernels
import HearthTokenizers

/// The scheduler: requests queue for a slot, join the running batch between steps, and leave it
/// when they finish (continuous batching; the class's documentation has the whole picture).
extension Generator {
    // MARK: - The scheduler

    /// One request: its prompt, what it has fed into its slot, and its sampling state.
    /// `@unchecked Sendable`: the scheduler thread owns its state; `warming` alone is also set
    /// by the read-ahead, under the generator's `queue` lock.
    final class Job: @unchecked Sendable {
        let prompt: [Int32]
        let parameters: GenerationParameters
        let isCancelled: () -> Bool
        let onToken: (GeneratedToken) -> Void
        let onEnd: (Result<GenerationSummary, Error>) -> Void
        var slot = -1
        /// Tokens still to feed, starting at `position` of the slot.
        var input: ArraySlice<Int32> = []
        var position = 0
        /// The length the fed run will reach (LongRoPE picks its factors by it).
        var ropeLength = 0
        var run: SequenceRun
        var admitted = DispatchTime.now()
        var prefilled = false
        /// Its prompt's blocks are being read ahead from the prompt cache's disk tier: it waits
        /// in the queue (others are admitted past it) until they are in memory.
        var warming = false
        /// Other choices of the same prompt, started from this job's prompt once it is processed.
        var forks: [Job] = []
        /// A choice forked from another's prompt (copies a cached prefix of any length).
        var isFork = false
        /// Speculative decoding: the n-gram index of the sequence and the draft length control.
        var lookup = PromptLookup()
        /// Per class of match length (``PromptLookup/rateClass(_:)``), its drafts' acceptance
        /// and length control (class 0: a draft model's drafts).
        var drafting = [DraftControl](repeating: DraftControl(), count: PromptLookup.rateClasses)
        /// The rate class of the drafts fed in the current step.
        var draftMatch = 0

        init(
            prompt: [Int32], parameters: GenerationParameters, tokenizer: any Tokenizer, isCancelled: @escaping () -> Bool,
            onToken: @escaping (GeneratedToken) -> Void, onEnd: @escaping (Result<GenerationSummary, Error>) -> Void
        ) {
            self.prompt = prompt
            self.parameters = parameters
            self.isCancelled = isCancelled
            self.onToken = onToken
            self.onEnd = onEnd
            run = SequenceRun(prompt: prompt, parameters: parameters, tokenizer: tokenizer)
        }
    }

    func submit(_ job: Job) {
        // A prompt that may continue a chain on the prompt cache's disk tier: its blocks are
        // read ahead off the scheduler thread, so running sequences do not wait for the files.
        let readAhead = promptCache.flatMap { cache in
            cache.disk != nil && job.prompt.count > cache.layout.blockTokens ? cache : nil
        }
        queue.lock()
        job.warming = readAhead != nil
        pending.append(job)
        queue.unlock()
        if let readAhead {
            let longFactors = decoder.usesLongFactors(length: job.prompt.count)
            DispatchQueue.global(qos: .userInitiated).async { [self] in
                readAhead.prefetch(job.prompt, limit: job.prompt.count - 1, longFactors: longFactors)
                queue.lock()
                job.warming = false
                queue.unlock()
                wake()
            }
        }
        wake()
    }

    /// Starts the scheduler thread unless it runs.
    func wake() {
        queue.lock()
        let start = !schedulerRunning
        schedulerRunning = true
        queue.unlock()
        guard start else { return }
        let thread = Thread { [self] in self.schedule() }
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// The scheduler thread: steps while requests run or can be admitted, then exits (a request
    /// whose blocks are being read ahead wakes it again when they are in memory).
    func schedule() {
        while true {
            queue.lock()
            if active.isEmpty && pending.allSatisfy({ $0.warming && !$0.isCancelled() }) {
                schedulerRunning = false
                queue.unlock()
                return
            }
            queue.unlock()
            lock.lock()
            let held = step()
            let filled = decoder.cache.counts.reduce(0, +)
            lock.unlock()
            queue.lock()
            filledPositions = filled
            if let held {
                stepTotals.steps += 1
                stepTotals.sequences += held.sequences
                stepTotals.tokens += held.tokens
                if let groups = held.headGroups {
                    stepTotals.sparseHeadSteps += 1
                    stepTotals.sparseHeadGroups += groups
                }
            }
            queue.unlock()
        }
    }

    /// One step: admit waiting requests into free slots, drop cancelled ones, run one batch,
    /// sample every sequence whose logits it produced.
    /// One scheduler step; returns the sequences and tokens the forward pass held (nil when
    /// nothing ran: no active request, or the step was cancelled or failed).
    @discardableResult
    func step() -> (sequences: Int, tokens: Int, headGroups: Int?)? {
        admit()
        for job in active where job.isCancelled() {
            job.run.summary.finishReason = .cancelled
            finish(job, .success(job.run.finish()))
        }
        guard !active.isEmpty else { return nil }
        let batch = assembleBatch()
        let started = DispatchTime.now()
        let logits: UnsafeBufferPointer<Float>
        do {
            // A step of a long prompt can take a while: when every request in it is cancelled,
            // it ends between layers (each slot keeps what it held before the step).
            logits = try decoder.forward(
                batch: batch.items, logitsFor: batch.logitsFor, generatedRows: batch.generatedRows, lengths: batch.lengths,
                headMask: batch.headMask, shouldStop: { batch.fed.allSatisfy { $0.job.isCancelled() } })
        } catch let error as EngineError where error.code == .cancelled {
            for entry in batch.fed {
                entry.job.run.summary.finishReason = .cancelled
                finish(entry.job, .success(entry.job.run.finish()))
            }
            return nil
        } catch {
            for entry in batch.fed {
                slots[entry.job.slot].tokens = []
                finish(entry.job, .failure(error))
            }
            return nil
        }
        settle(batch.fed, logits: logits)
        // A step of decode tokens only (with their drafts) times the cost of a row.
        if !batch.prefills { stepCosts.record(rows: batch.items.count, seconds: seconds(since: started)) }
        return (Set(batch.fed.map { $0.job.slot }).count, batch.items.count, batch.headMask == nil ? nil : decoder.lastHeadGroups)
    }

    /// One step's forward-pass input: its rows, the rows whose logits are read, and what each
    /// job fed.
    struct StepBatch {
        var items: [Decoder.BatchItem] = []
        var logitsFor: [Int] = []
        var fed: [Fed] = []
        var lengths: [Int: Int] = [:]
        /// Decode inputs and drafts come first: 16-bit rows under `.outliers`/`.balanced`/`.mixed`.
        var generatedRows = 0
        var prefills = false
        /// The tokens any of the batch's logits rows may choose (nil: every token), for
        /// ``Generator/sparseHead``.
        var headMask: [UInt64]?
    }

    /// Decode tokens first (one per running sequence), then prompt chunks in arrival order.
    /// A decoding sequence may add drafted tokens after its input (speculative decoding); each
    /// gets a row of logits to verify it.
    private func assembleBatch() -> StepBatch {
        var batch = StepBatch()
        let decoding = active.filter { $0.input.count == 1 }
        let prefilling = active.filter { $0.input.count > 1 }
        let proposals = drafts(for: decoding)
        for (job, drafts) in zip(decoding, proposals) {
            let input = job.input.first ?? 0
            batch.fed.append(Fed(job: job, count: 1 + drafts.count, logitsRow: batch.logitsFor.count, drafts: drafts))
            for (i, token) in ([input] + drafts).enumerated() {
                batch.logitsFor.append(batch.items.count)
                batch.items.append(.init(sequence: job.slot, position: job.position + i, token: token))
            }
            batch.lengths[job.slot] = job.ropeLength + drafts.count
        }
        batch.generatedRows = batch.items.count
        batch.prefills = !prefilling.isEmpty
        if sparseHead, prefilling.isEmpty, !decoding.isEmpty, proposals.allSatisfy(\.isEmpty) {
            batch.headMask = unitedHeadMask(decoding)
        }
        var budget = decoder.maxBatch - batch.items.count
        if !decoding.isEmpty { budget = min(budget, max(1, interleavedPrefillTokens)) }
        for job in prefilling where budget > 0 {
            let n = min(job.input.count, budget)
            budget -= n
            let completes = n == job.input.count
            batch.fed.append(Fed(job: job, count: n, logitsRow: completes ? batch.logitsFor.count : nil))
            if completes { batch.logitsFor.append(batch.items.count + n - 1) }
            for (i, token) in job.input.prefix(n).enumerated() {
                batch.items.append(.init(sequence: job.slot, position: job.position + i, token: token))
            }
            batch.lengths[job.slot] = job.ropeLength
        }
        return batch
    }

    /// The union of the decoding jobs' next-step masks (``SequenceRun/headMask()``), or nil when
    /// one of them needs every logit.
    private func unitedHeadMask(_ jobs: [Job]) -> [UInt64]? {
        var united: [UInt64] = []
        for job in jobs {
            guard let mask = job.run.headMask() else { return nil }
            if united.count < mask.count { united += Array(repeating: 0, count: mask.count - united.count) }
            for (i, word) in mask.enumerated() { united[i] |= word }
        }
        return united
    }

    /// Hands each job its rows of `logits`: a prompt chunk that did not complete its prompt
    /// only advances; drafts are verified; a completed prompt or a decode token samples.
    private func settle(_ fed: [Fed], logits: UnsafeBufferPointer<Float>) {
        let vocab = model.options.vocabSize
        for entry in fed {
            let job = entry.job
            guard let base = logits.baseAddress, let row = entry.logitsRow else {
                slots[job.slot].tokens += job.input.prefix(entry.count)
                job.position += entry.count
                job.input = job.input.dropFirst(entry.count)
                keepWindowRows(slot: job.slot, ropeLength: job.ropeLength)
                continue
            }
            let rowLogits = { (i: Int) in UnsafeBufferPointer(start: base + (row + i) * vocab, count: vocab) }
            if !entry.drafts.isEmpty {
                // A prompt cached but for its last token feeds that token as a decode row, which
                // may carry drafts: its first row is still the prompt's end, where choices fork.
                if !job.prefilled { finishPrefill(job, logits: rowLogits(0)) }
                verify(job, drafts: entry.drafts, logits: rowLogits)
                continue
            }
            slots[job.slot].tokens += job.input.prefix(entry.count)
            job.position += entry.count
            job.input = job.input.dropFirst(entry.count)
            if !job.prefilled { finishPrefill(job, logits: rowLogits(0)) }
            advance(job, rowLogits(0))
        }
    }

    /// What a step fed for one job: `count` items from its input (and drafts), whose logits
    /// (when any) start at row `logitsRow`: one row, or one per fed token when it drafted.
    struct Fed {
        var job: Job
        var count: Int
        var logitsRow: Int?
        var drafts: [Int32] = []
    }

    /// `job`'s prompt has been processed (`logits` are its last position's): its prefill time is
    /// recorded and the other choices of its group fork from it.
    func finishPrefill(_ job: Job, logits: UnsafeBufferPointer<Float>) {
        job.prefilled = true
        job.run.summary.prefillSeconds = seconds(since: job.admitted)
        if !job.forks.isEmpty { startForks(of: job, logits: logits) }
    }

    /// Samples `job`'s next token from `logits`: it finishes, or its next input is that token.
    func advance(_ job: Job, _ logits: UnsafeBufferPointer<Float>) {
        let outcome = job.run.next(logits, eos: model.eosIDs, context: decoder.context, onToken: job.onToken)
        switch outcome {
        case .finished:
            finish(job, .success(job.run.finish()))
        case .feed(let token):
            feed(job, token)
        }
    }

    /// Makes `token` (just sampled and appended to the history) `job`'s next input.
    func feed(_ job: Job, _ token: Int32) {
        let length = job.run.history.count
        if decoder.needsRecompute(cached: length - 1, end: length) {
            // LongRoPE crossed its original context: the whole sequence again, with the long factors.
            slots[job.slot].tokens = []
            job.input = job.run.history[...]
            job.position = 0
        } else {
            job.input = [token]
        }
        job.ropeLength = length
    }

    /// Puts jobs back at the head of the queue, in order.
    func requeue(_ jobs: [Job]) {
        guard !jobs.isEmpty else { return }
        queue.lock()
        pending.insert(contentsOf: jobs, at: 0)
        queue.unlock()
    }

    /// Moves waiting requests into free slots: the one holding the longest prefix of the
    /// prompt (least recently used on ties), topped up from another slot with a longer one or
    /// from the prompt cache with a longer block-aligned one (``fillPrefix(for:slot:)``). The
    /// copy is made outside the queue's lock, so a long prefix does not hold up submissions.
    func admit() {
        while true {
            queue.lock()
            // The first request that can go: not waiting for its read-ahead (or cancelled).
            guard let index = pending.firstIndex(where: { !$0.warming || $0.isCancelled() }) else {
                queue.unlock()
                return
            }
            let job = pending[index]
            if job.isCancelled() {
                pending.remove(at: index)
                job.run.summary.finishReason = .cancelled
                // Its waiting choices start on their own (or end here, when cancelled too).
                pending.insert(contentsOf: job.forks, at: index)
                job.forks = []
                job.onEnd(.success(job.run.finish()))
                queue.unlock()
                continue
            }
            guard let s = idleSlot(for: job.prompt) else {
                queue.unlock()
                return
            }
            pending.remove(at: index)
            queue.unlock()
            job.admitted = DispatchTime.now()  // a prefix's copy counts in the prefill time
            guard let reuse = fillPrefix(for: job, slot: s) else {
                // Cancelled while a cached prefix was being copied: the slot holds nothing.
                slots[s].tokens = []
                job.run.summary.finishReason = .cancelled
                requeue(job.forks)
                job.forks = []
                job.onEnd(.success(job.run.finish()))
                continue
            }
            slots[s].tokens = Array(job.prompt.prefix(reuse))
            slots[s].busy = true
            touch(s)
            lastSequence = s
            job.slot = s
            job.position = reuse
            job.input = job.prompt[reuse...]
            job.ropeLength = job.prompt.count
            job.run.summary.cachedPromptTokens = reuse
            active.append(job)
            queue.lock()
            runningCount += 1
            queue.unlock()
        }
    }

    /// Fills slot `s` with the longest prefix of `job`'s prompt that needs no computing (at
    /// least one token is left to compute, for the logits): what the slot holds, a longer one
    /// held by another slot (a shared system prompt, a forked conversation; at least 16 tokens
    /// unless `job` is a fork), or a longer block-aligned one from the prompt cache (a
    /// conversation that has left the slots). The same LongRoPE checks hold for each: no prefix
    /// whose keys were computed with other factors than the prompt needs.
    /// - Returns: the positions the slot holds, or nil when `job` was cancelled while a cached
    ///   prefix was being copied (the slot is then empty).
    func fillPrefix(for job: Job, slot s: Int) -> Int? {
        let limit = job.prompt.count - 1  // at least one token is recomputed for logits
        var reuse = reusablePrefix(slot: s, job.prompt, limit: limit)
        var donor = s
        for d in slots.indices where d != s {
            let shared = reusablePrefix(slot: d, job.prompt, limit: limit)
            if shared > reuse && (shared >= 16 || job.isFork) {
                reuse = shared
                donor = d
            }
        }
        let longFactors = decoder.usesLongFactors(length: job.prompt.count)
        if decoder.needsRecompute(cached: reuse, end: job.prompt.count)
            || decoder.usesLongFactors(length: decoder.cache.counts[donor]) != longFactors
        {
            reuse = 0
        }
        if let promptCache,
            let hit = promptCache.lookup(
                job.prompt, limit: limit, beyond: reuse, longFactors: longFactors,
                accept: { [decoder] in !decoder.needsRecompute(cached: $0, end: job.prompt.count) })
        {
            // Full-layer rows the slot already holds for this prompt stay where they are.
            let held = min(commonPrefix(slots[s].tokens, job.prompt, limit: hit.count), decoder.cache.counts[s])
            let keeping = decoder.usesLongFactors(length: decoder.cache.counts[s]) == longFactors ? held : 0
            slots[s].tokens = []
            guard promptCache.restore(hit, into: decoder.cache, sequence: s, keeping: keeping, isCancelled: job.isCancelled)
            else { return nil }
            return hit.count
        }
        return decoder.cache.copyPrefix(from: donor, to: s, count: reuse)
    }

    /// A slot no request runs in: the one whose tokens share the longest prefix with
    /// `prompt`, the least recently used among equals.
    func idleSlot(for prompt: [Int32]) -> Int? {
        var best: (slot: Int, shared: Int, used: UInt64)?
        for s in slots.indices where !slots[s].busy {
            let candidate = (slot: s, shared: commonPrefix(slots[s].tokens, prompt, limit: prompt.count), used: slots[s].lastUsed)
            guard let current = best else {
                best = candidate
                continue
            }
            if candidate.shared > current.shared || (candidate.shared == current.shared && candidate.used < current.used) {
                best = candidate
            }
        }
        return best?.slot
    }

    func touch(_ s: Int) {
        useClock += 1
        slots[s].lastUsed = useClock
    }

    func finish(_ job: Job, _ result: Result<GenerationSummary, Error>) {
        active.removeAll { $0 === job }
        // Choices still waiting for this job's prompt: failed with it, or started on their own.
        let forks = job.forks
        job.forks = []
        if case .failure = result {
            for fork in forks { fork.onEnd(result) }
        } else {
            requeue(forks)
        }
        queue.lock()
        runningCount -= 1
        queue.unlock()
        if job.slot >= 0 {
            slots[job.slot].busy = false
            if case .failure = result {
                decoder.cache.truncate(to: 0, sequence: job.slot)
            } else {
                storeInPromptCache(slot: job.slot)
            }
        }
        job.onEnd(result)
    }

    /// Stores what slot `s` holds (a request just ended there: its prompt and the tokens it
    /// generated) in the prompt cache, before the request's end is reported, so a request that
    /// follows it finds it. Only blocks the cache lacks are copied.
    func storeInPromptCache(slot s: Int) {
        guard let promptCache else { return }
        let held = min(slots[s].tokens.count, decoder.cache.counts[s])
        promptCache.store(
            slots[s].tokens.prefix(held), cache: decoder.cache, sequence: s,
            longFactors: decoder.usesLongFactors(length: decoder.cache.counts[s]))
    }

    /// The prefix of `prompt` (at most `limit` tokens) slot `s` holds and can continue from: the
    /// tokens it shares with the prompt, or 0 when its sliding-window layers no longer hold the
    /// window before that point (``KVCache/canResume(at:sequence:)``: a shorter prefix is further
    /// back still, so the prompt is processed from the start).
    func reusablePrefix(slot s: Int, _ prompt: [Int32], limit: Int) -> Int {
        let shared = min(commonPrefix(slots[s].tokens, prompt, limit: limit), decoder.cache.counts[s])
        return decoder.cache.canResume(at: shared, sequence: s) ? shared : 0
    }

    func commonPrefix(_ a: [Int32], _ b: [Int32], limit: Int) -> Int {
        var n = 0
        let end = min(a.count, b.count, limit)
        while n < end && a[n] == b[n] { n += 1 }
        return n
    }
}
