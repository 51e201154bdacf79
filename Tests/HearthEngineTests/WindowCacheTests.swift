import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// The window-sized KV cache of sliding-window layers (``KVCache/Window``): its bookkeeping on a
/// hand-filled cache, then on the real default model (Gemma 3 270M: window 512 on 15 of 18
/// layers) against the full-length cache (`windowedCache: false`, every layer holding the whole
/// context, as before): teacher-forced prompts longer than the window and greedy generation past
/// it, at batch 1 and a wide batch, f16 and q8_0; speculative steps rolled back across a
/// compaction; prefix reuse that reaches back past what the window layers hold; snapshots.
///
/// The window cache reads the same keys in the same tiles as the full cache (positions are only
/// shifted by the buffer's start), so the logits agree to the bit; the bound asserted is a tight
/// margin (1e-4 on logits of magnitude ~10–30), and token sequences are compared only between
/// runs that compute the same rows in the same batches (identical arithmetic, so no near-tie
/// can part them).
@Suite(.serialized) struct WindowCacheTests {
    static let modelPath = Fixtures.root.appendingPathComponent("models/gemma-3-270m-q4_k_m.gguf").path
    static let model = Result { try TransformerModel(path: modelPath, threads: 2) }
    static let tolerance: Float = 1e-4

    /// `count` tokens of the test corpus (starting `from` tokens in).
    static func text(_ count: Int, from start: Int = 0) throws -> [Int32] {
        let corpus = try String(contentsOf: Fixtures.directory.appendingPathComponent("corpus.txt"), encoding: .utf8)
        let tokens = try model.get().tokenizer.encode(corpus, addSpecialTokens: true)
        try #require(tokens.count >= start + count)
        return Array(tokens[start..<(start + count)])
    }

    /// Bytes a cache of `context` positions takes on the default model when its sliding layers
    /// hold `span` positions (keys and values, one slot): from the model's shape, not the cache.
    static func expectedBytes(context: Int, span: Int, rowBytes: Int) throws -> Int {
        let o = try model.get().options
        let sliding = (0..<o.layerCount).filter(o.isSliding).count
        return 2 * rowBytes * (sliding * span + (o.layerCount - sliding) * context)
    }

    static func decoder(windowed: Bool, kvType: DType, batch: Int, context: Int = 2048) throws -> Decoder {
        let model = try model.get()
        return try Decoder(
            weights: model.weights, options: model.options, context: context, maxBatch: batch, kvType: kvType,
            windowedCache: windowed, pool: WorkerPool(threads: 2))
    }

    /// Largest |a − b| over the rows.
    static func maxDifference(_ a: UnsafeBufferPointer<Float>, _ b: UnsafeBufferPointer<Float>) -> Float {
        var worst: Float = a.count == b.count ? 0 : .infinity
        for i in 0..<min(a.count, b.count) { worst = max(worst, abs(a[i] - b[i])) }
        return worst
    }

    static func argmax(_ row: UnsafeBufferPointer<Float>) -> Int32 {
        var best = 0
        for i in row.indices where row[i] > row[best] { best = i }
        return Int32(best)
    }

    // MARK: - Bookkeeping on a hand-filled cache

    /// Window 4, lookback 1, room 2 (span 3 + 1 + 2 = 6) beside a full layer: fed in steps of 1
    /// and 2, the window layer holds exactly the positions from its start on, with the values
    /// stored at them, never fewer than the W − 1 + lookback before the step; resuming is allowed
    /// exactly at 0 and from start + W − 1 on; cutting back further empties the slot; a prefix
    /// copied to another slot carries its window start; a step wider than the room is refused.
    @Test func bufferKeepsTheWindowAndRefusesWhatItLost() throws {
        let window = KVCache.Window(size: 4, layers: [true, false], capacity: 64, maxBatch: 2, lookback: 1, minimumRoom: 2)
        #expect(window.span == 6)
        let cache = try KVCache(layers: 2, capacity: 64, width: 2, sequences: 2, type: .f32, window: window)
        #expect(cache.byteCount == 2 * 2 * (6 + 64) * 2 * 4)
        func row(_ layer: Int, _ position: Int, _ sequence: Int = 0) -> [Float] {
            let p = cache.key(layer, position, sequence: sequence).assumingMemoryBound(to: Float.self)
            let v = cache.value(layer, position, sequence: sequence).assumingMemoryBound(to: Float.self)
            return [p[0], p[1], v[0], v[1]]
        }
        func expected(_ layer: Int, _ position: Int) -> [Float] {
            let x = Float(position * 10 + layer)
            return [x, -x, x + 0.5, -x - 0.5]
        }
        var p = 0
        var compactions = 0
        while p < 40 {
            let b = p % 3 == 0 ? 2 : 1
            cache.truncate(to: p)
            let before = cache.windowStarts[0]
            try cache.makeRoom(sequence: 0, from: p, count: b)
            if cache.windowStarts[0] != before { compactions += 1 }
            for t in p..<(p + b) {
                for layer in 0..<2 {
                    let e = expected(layer, t)
                    cache.store(layer: layer, position: t, keys: [e[0], e[1]], values: [e[2], e[3]])
                }
            }
            cache.counts[0] = p + b
            p += b
            let start = cache.windowStarts[0]
            #expect(p - start <= window.span)
            #expect(start <= max(0, p - b - 3 - 1), "the window and lookback before the step at \(p - b) are held")
            for t in start..<p { #expect(row(0, t) == expected(0, t), "window layer, position \(t)") }
            for t in 0..<p { #expect(row(1, t) == expected(1, t), "full layer, position \(t)") }
        }
        #expect(compactions >= 8)
        let start = cache.windowStarts[0]
        #expect(start > 0)
        #expect(cache.earliestResume() == start + 3)
        for q in 0...p { #expect(cache.canResume(at: q) == (q == 0 || q >= start + 3), "resume at \(q)") }
        #expect(!cache.canResume(at: p + 1))

        // A prefix copy into slot 1 carries the window start and the rows.
        #expect(cache.copyPrefix(from: 0, to: 1, count: p - 1) == p - 1)
        #expect(cache.windowStarts[1] == start && cache.counts[1] == p - 1)
        for t in start..<(p - 1) { #expect(row(0, t, 1) == expected(0, t)) }
        for t in 0..<(p - 1) { #expect(row(1, t, 1) == expected(1, t)) }
        // Not from a point the window layers no longer hold: nothing is copied.
        #expect(cache.copyPrefix(from: 0, to: 1, count: start + 1) == 0)
        #expect(cache.counts[1] == 0 && cache.windowStarts[1] == 0)

        // Cutting back within what it holds keeps it; further back empties the slot.
        cache.truncate(to: start + 3)
        #expect(cache.counts[0] == start + 3 && cache.windowStarts[0] == start)
        cache.truncate(to: start + 2)
        #expect(cache.counts[0] == 0 && cache.windowStarts[0] == 0)

        // A step wider than the buffer's room is refused.
        #expect(throws: EngineError.self) {
            try cache.makeRoom(sequence: 0, from: 0, count: window.span + 1)
        }
    }

    // MARK: - The default model against the full-length cache

    /// A 1,100-token prompt fed in steps of `batch` (batch 1 is the decode path: keys split across
    /// the workers, from position 800 on; 96 the wide prompt path), then 100 greedy tokens one at
    /// a time: the window
    /// cache compacts at least twice and every logits row checked matches the full cache's.
    /// Two of the four combinations (the suite's time): q8_0 at batch 1 (integer key dots on the
    /// shifted buffer) and f16 at 96 (Float tiles); f16 decode steps are covered by
    /// ``speculativeRollbackAcrossCompactions()`` (steps of up to 8 rows, the narrow shape).
    @Test(arguments: zip([1, 96], [DType.q8_0, .f16]))
    func matchesTheFullCache(batch: Int, kvType: DType) throws {
        // Both decoders take steps of up to 96 (the span is the same for 1 and 96: the room is at
        // least 256); "batch 1" feeds its first 800 prompt tokens 96 at a time and then goes one
        // token per step, across both compactions (at 895 and 1,151).
        let windowed = try Self.decoder(windowed: true, kvType: kvType, batch: 96)
        let full = try Self.decoder(windowed: false, kvType: kvType, batch: 96)
        let span = 511 + 128 + 256
        #expect(windowed.cache.window?.span == span)
        let rowBytes = full.cache.rowBytes
        #expect(windowed.cache.byteCount == (try Self.expectedBytes(context: 2048, span: span, rowBytes: rowBytes)))
        #expect(full.cache.byteCount == (try Self.expectedBytes(context: 2048, span: 2048, rowBytes: rowBytes)))
        let prompt = try Self.text(1100)
        var worst: Float = 0
        var rows = 0
        var position = 0
        var compactions = 0
        var lastStart = 0
        func step(_ tokens: [Int32], logitsFor: [Int]) throws -> UnsafeBufferPointer<Float> {
            let items = tokens.enumerated().map { Decoder.BatchItem(sequence: 0, position: position + $0.offset, token: $0.element) }
            let a = try windowed.forward(batch: items, logitsFor: logitsFor)
            let b = try full.forward(batch: items, logitsFor: logitsFor)
            worst = max(worst, Self.maxDifference(a, b))
            rows += logitsFor.count
            position += tokens.count
            if windowed.cache.windowStarts[0] != lastStart {
                compactions += 1
                lastStart = windowed.cache.windowStarts[0]
            }
            return b
        }
        var done = 0
        while done < prompt.count {
            let n = min(batch == 1 && done >= 800 ? 1 : 96, prompt.count - done)
            // Every 32nd position's logits (the 262k-entry head per decode step would take most
            // of the test's time at batch 1).
            let rows = (0..<n).filter { (done + $0) % 32 == 31 || done + $0 == prompt.count - 1 }
            _ = try step(Array(prompt[done..<(done + n)]), logitsFor: rows)
            done += n
        }
        // The last prompt position again (a rollback by one), for its logits alone.
        position -= 1
        var last = try step([prompt[prompt.count - 1]], logitsFor: [0])
        for _ in 0..<100 {
            let token = Self.argmax(last)
            last = try step([token], logitsFor: [0])
        }
        print("window cache \(kvType) batch \(batch): \(rows) rows, \(compactions) compactions, max |Δlogit| \(worst)")
        #expect(compactions >= 2)
        #expect(windowed.cache.windowStarts[0] > 0)
        #expect(worst <= Self.tolerance, "max |Δlogit| \(worst)")
    }

    /// Speculative steps (an input and up to 7 drafts, of which a seeded number is kept, the rest
    /// cut back, as verification does) from position 848 to 1,160 in a cache sized for batches
    /// of 64 (the first 848 positions fed 53 at a time; compactions near 895 and 1,145): the cuts land before, across and after
    /// two compactions, and every row's logits match the full cache following the same script.
    @Test func speculativeRollbackAcrossCompactions() throws {
        let windowed = try Self.decoder(windowed: true, kvType: .f16, batch: 64)
        let full = try Self.decoder(windowed: false, kvType: .f16, batch: 64)
        let text = try Self.text(1400)
        var position = 0
        var worst: Float = 0
        func step(_ tokens: [Int32], logitsFor: [Int]) throws {
            let items = tokens.enumerated().map { Decoder.BatchItem(sequence: 0, position: position + $0.offset, token: $0.element) }
            let a = try windowed.forward(batch: items, logitsFor: logitsFor, generatedRows: logitsFor.count)
            let b = try full.forward(batch: items, logitsFor: logitsFor, generatedRows: logitsFor.count)
            worst = max(worst, Self.maxDifference(a, b))
        }
        while position < 848 {
            try step(Array(text[position..<(position + 53)]), logitsFor: [])
            position += 53
        }
        var rng = SeededGenerator(seed: 27)
        var starts: Set<Int> = []
        var rollbacks = 0
        while position < 1160 {
            let drafts = Int(rng.next() % 8)
            let fed = Array(text[position..<(position + 1 + drafts)])
            try step(fed, logitsFor: Array(0..<fed.count))
            let kept = 1 + Int(rng.next() % UInt64(drafts + 1))
            if kept < fed.count {
                rollbacks += 1
                windowed.cache.truncate(to: position + kept)
                full.cache.truncate(to: position + kept)
                #expect(windowed.cache.count == position + kept, "a rollback keeps the step's accepted positions")
            }
            position += kept
            starts.insert(windowed.cache.windowStarts[0])
        }
        print("speculative window cache: \(rollbacks) rollbacks, window starts \(starts.sorted()), max |Δlogit| \(worst)")
        #expect(starts.count >= 3, "two compactions or more")
        #expect(rollbacks >= 20)
        #expect(worst <= Self.tolerance, "max |Δlogit| \(worst)")
    }

    func greedy(_ maxTokens: Int) -> GenerationParameters {
        var p = GenerationParameters()
        p.maxTokens = maxTokens
        p.sampling.temperature = 0
        p.speculative = .off
        return p
    }

    func generate(_ generator: Generator, _ prompt: [Int32], _ maxTokens: Int = 8) throws -> (
        ids: [Int32], summary: GenerationSummary
    ) {
        var ids: [Int32] = []
        let summary = try generator.run(prompt: prompt, parameters: greedy(maxTokens)) { ids.append($0.id) }
        return (ids, summary)
    }

    /// Prefix reuse on a generator whose slot holds a 1,000-token conversation: a prompt sharing
    /// only its first 300 tokens (long gone from the window layers) is processed from the start
    /// (the full cache reuses the 300), one extending it reuses all of it, and one that departs
    /// 40 tokens before its end (inside the lookback) reuses up to there, as the full cache does.
    /// Every answer equals the full-cache generator's wherever both process the same rows.
    @Test func prefixReuseFallsBackPastTheWindow() throws {
        let model = try Self.model.get()
        let windowed = try Generator(model: model, context: 2048, threads: 2, batch: 64)
        let full = try Generator(model: model, context: 2048, threads: 2, batch: 64, windowedCache: false)
        // 15 of 18 layers at 895 positions (511 + 128 + 256) instead of 2,048: f16 rows of 512 bytes.
        #expect(windowed.cacheBytes == (try Self.expectedBytes(context: 2048, span: 895, rowBytes: 512)))
        #expect(full.cacheBytes == (try Self.expectedBytes(context: 2048, span: 2048, rowBytes: 512)))
        let a = try Self.text(1000)
        let first = try generate(windowed, a)
        #expect(try generate(full, a).ids == first.ids)
        #expect(windowed.cachedTokenCount > 1000)

        // Extending the conversation: everything it holds is reused.
        let c = a + first.ids + (try Self.text(20, from: 2000))
        let cw = try generate(windowed, c), cf = try generate(full, c)
        #expect(cw.summary.cachedPromptTokens == cf.summary.cachedPromptTokens)
        #expect(cw.summary.cachedPromptTokens >= 1000)
        #expect(cw.ids == cf.ids)

        // Departing 40 tokens before the end: within the lookback, reused up to there.
        let d = Array(c.prefix(c.count - 40)) + (try Self.text(30, from: 3000))
        let dw = try generate(windowed, d), df = try generate(full, d)
        #expect(dw.summary.cachedPromptTokens == c.count - 40)
        #expect(df.summary.cachedPromptTokens == c.count - 40)
        #expect(dw.ids == df.ids)

        // Sharing only the first 300 tokens: the window layers no longer hold the window before
        // position 300, so nothing is reused (the full cache reuses 300), and the answer is a
        // fresh generator's.
        let b = Array(a.prefix(300)) + (try Self.text(60, from: 4000))
        let bw = try generate(windowed, b)
        #expect(bw.summary.cachedPromptTokens == 0)
        #expect(try generate(full, b).summary.cachedPromptTokens == 300)
        let fresh = try Generator(model: model, context: 2048, threads: 2, batch: 64, windowedCache: false)
        #expect(try generate(fresh, b).ids == bw.ids)
    }

    /// A snapshot of a window cache holds the window layers' rows from their start only; restored
    /// into another window-cache generator it continues exactly as the original; a full-length
    /// generator refuses it with a typed error; a full-length snapshot restores into a window cache
    /// (keeping what its buffer holds) and continues as the generator that made it.
    @Test func snapshotsRoundTrip() throws {
        let model = try Self.model.get()
        let a = try Self.text(1000)
        let original = try Generator(model: model, context: 2048, threads: 2, batch: 64)
        let first = try generate(original, a)
        let data = original.snapshot()
        let held = original.cachedTokenCount
        #expect(held > 1000)

        let restored = try Generator(model: model, context: 4096, threads: 2, batch: 64)
        try restored.restore(data)
        #expect(restored.cachedTokenCount == held)
        let next = a + first.ids + (try Self.text(20, from: 2000))
        let fromSnapshot = try generate(restored, next)
        let fromOriginal = try generate(original, next)
        #expect(fromSnapshot.summary.cachedPromptTokens == held)
        #expect(fromOriginal.summary.cachedPromptTokens == held)
        #expect(fromSnapshot.ids == fromOriginal.ids)

        let fullLength = try Generator(model: model, context: 2048, threads: 2, batch: 64, windowedCache: false)
        do {
            try fullLength.restore(data)
            Issue.record("a full-length cache restored a window cache's snapshot")
        } catch let error as EngineError {
            #expect(error.code == .invalidSnapshot)
        }
        #expect(fullLength.cachedTokenCount == 0)

        // The other way: a full-length snapshot (every row) into a window cache.
        let fullFirst = try generate(fullLength, a)
        #expect(fullFirst.ids == first.ids)
        let fullData = fullLength.snapshot()
        #expect(fullData.count > data.count)
        let intoWindow = try Generator(model: model, context: 2048, threads: 2, batch: 64)
        try intoWindow.restore(fullData)
        #expect(intoWindow.cachedTokenCount == held)
        let w = try generate(intoWindow, next), f = try generate(fullLength, next)
        #expect(w.summary.cachedPromptTokens == held && f.summary.cachedPromptTokens == held)
        #expect(w.ids == f.ids)
    }
}
