import Foundation
import HearthConstraints
import HearthKernels
import HearthTokenizers

/// Speculative decoding in the scheduler's steps: prompt lookup's and the draft model's drafts
/// for the decoding jobs, and their verification against the target's logits (docs/SPECULATIVE.md).
extension Generator {
    /// The most rows a step of decoding sequences and their drafts may have (each sequence's
    /// draft length is chosen by what a row costs, ``StepCosts``, within this).
    static let speculativeRows = 32

    /// The tokens each decoding job drafts this step, within ``speculativeRows`` rows in all:
    /// prompt lookup's at once, then the draft model's for every job that drafts with it, in one
    /// batched run of the draft model.
    func drafts(for decoding: [Job]) -> [[Int32]] {
        var budget = max(0, min(decoder.maxBatch - decoding.count, Self.speculativeRows - decoding.count))
        var rows = decoding.count
        var proposals = [[Int32]](repeating: [], count: decoding.count)
        var requests: [DraftModel.Request] = [], requesters: [Int] = []
        for (i, job) in decoding.enumerated() where budget > 0 {
            var k = 0
            if job.parameters.speculative == .draft, let draft {
                // Text being copied (a repeat of at least `copiedMatch` tokens) drafts by lookup,
                // which costs nothing; elsewhere the draft model drafts.
                if forcedDraftLength == nil {
                    proposals[i] = lookupDrafts(for: job, limit: budget, others: rows - 1, shortest: Self.copiedMatch)
                    k = proposals[i].count
                }
                if k == 0 { k = draftLength(for: job, limit: budget, others: rows - 1, draft: draft) }
                if k > 0 && proposals[i].isEmpty {
                    requests.append(.init(slot: job.slot, history: job.run.history, count: k))
                    requesters.append(i)
                }
            } else {
                proposals[i] = lookupDrafts(for: job, limit: budget, others: rows - 1)
                k = proposals[i].count
            }
            budget -= k
            rows += k
        }
        if let draft, !requests.isEmpty {
            let drafted = draft.drafts(requests, shouldStop: { decoding.allSatisfy { $0.isCancelled() } })
            for (r, i) in requesters.enumerated() { proposals[i] = drafted[r] }
        }
        return proposals
    }

    /// The most tokens `job` may draft this step (at most `limit`): none unless its request
    /// asked for speculation; never past the context, the token limit or (LongRoPE) the
    /// original context while the sequence is still inside it.
    func draftLimit(for job: Job, limit: Int) -> Int {
        guard job.parameters.speculative != .off else { return 0 }
        // The input token is at job.position; drafts follow it.
        let filled = job.position + 1
        var most = min(limit, DraftControl.longestDraft, decoder.context - 1 - job.position)
        most = min(most, job.parameters.maxTokens - job.run.summary.completionTokens - 1)
        if case .longRoPE(_, _, let original, _) = model.options.rope.scaling, filled <= original {
            most = min(most, original - filled)
        }
        return max(0, most)
    }

    /// How many tokens the draft model drafts for `job` this step (beside `others` rows): the
    /// length that pays by its acceptance rate, ``stepCosts`` and the draft model's own
    /// measured step (before it was timed: a tenth of a step of the model).
    func draftLength(for job: Job, limit: Int, others: Int, draft: DraftModel) -> Int {
        let most = draftLimit(for: job, limit: limit)
        guard most > 0 else { return 0 }
        let draftSeconds =
            draft.costs.line == nil || stepCosts.line == nil ? 0.1 * stepCosts.seconds(rows: 1) : draft.costs.seconds(rows: 1)
        job.draftMatch = 0
        if let forcedDraftLength { return min(most, forcedDraftLength) }
        return job.drafting[0].length(limit: most, others: others, costs: stepCosts, draftSeconds: draftSeconds)
    }

    /// The shortest repeat a sequence drafting with a draft model drafts by lookup instead (the
    /// rate class of the longest matches, ``PromptLookup/rateClass(_:)``: such repeats are mostly
    /// copied on, and lookup drafts cost no draft-model steps).
    static let copiedMatch = 8

    /// Tokens `job` drafts by prompt lookup this step (at most `limit`, beside `others` rows of
    /// the step): none unless the text repeats (at least `shortest` tokens) and a draft pays by its
    /// acceptance rate and ``stepCosts``, within ``draftLimit(for:limit:)``.
    func lookupDrafts(for job: Job, limit: Int, others: Int, shortest: Int = PromptLookup.shortest) -> [Int32] {
        let most = draftLimit(for: job, limit: limit)
        guard most > 0 else { return [] }
        let (proposed, n) = job.lookup.match(job.run.history, limit: most)
        guard !proposed.isEmpty, n >= shortest else { return [] }
        let rates = PromptLookup.rateClass(n)
        let k = job.drafting[rates].length(limit: proposed.count, others: others, costs: stepCosts)
        job.draftMatch = rates
        return Array(proposed.prefix(k))
    }

    /// Verifies a speculative step of `job`: its input and `drafts` were fed at consecutive
    /// positions, `logits(i)` the model's logits after the i-th of them. The sampler picks each
    /// next token from them in turn, exactly as plain decoding would; a drafted token is kept
    /// while the pick equals it. The first pick that differs (or the pick after the last draft)
    /// becomes the next input, and the slot is cut back to the tokens kept.
    func verify(_ job: Job, drafts: [Int32], logits: (Int) -> UnsafeBufferPointer<Float>) {
        slots[job.slot].tokens += job.input.prefix(1)
        job.position += 1
        job.input = []
        var accepted = 0
        for i in 0...drafts.count {
            let outcome = job.run.next(logits(i), eos: model.eosIDs, context: decoder.context, onToken: job.onToken)
            if case .feed(let token) = outcome, i < drafts.count, token == drafts[i] {
                // The pick is the drafted token, whose keys and values the step already stored.
                accepted += 1
                slots[job.slot].tokens.append(token)
                job.position += 1
                continue
            }
            job.drafting[job.draftMatch].record(drafted: drafts.count, accepted: accepted)
            job.run.summary.draftedTokens += drafts.count
            job.run.summary.acceptedDraftTokens += accepted
            decoder.cache.truncate(to: job.position, sequence: job.slot)
            switch outcome {
            case .finished:
                finish(job, .success(job.run.finish()))
            case .feed(let token):
                feed(job, token)
            }
            return
        }
    }
}
