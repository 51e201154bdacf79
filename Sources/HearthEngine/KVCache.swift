import Foundation
import HearthKernels

/// The attention key/value cache, sized once for the context: per layer and per sequence
/// slot, keys and values of `width` (kvHeads × headDim) elements per position, stored as f16
/// (default), f32, q8_0 or q4_0. Every slot is allocated up front, so the memory a decoder needs
/// for `sequences` concurrent conversations is known when it is created.
///
/// **Window layers.** A layer with a sliding window of W positions (Gemma 3's local layers) can
/// never attend further back than W − 1 positions, so with ``Window`` it holds only a
/// window-sized stretch of positions per slot, ``Window/span`` of them, instead of `capacity`:
/// a sliding buffer whose first held position is ``windowStarts``. When a batch's positions
/// p…p+B−1 would run past the buffer's end, ``makeRoom(sequence:from:count:)`` moves the
/// positions from p − (W − 1) − ``Window/lookback`` on to the buffer's front and forgets the
/// older ones (one `memmove` per window layer every `span − (W − 1 + lookback)` positions).
/// Positions stay contiguous and in order, so attention reads a window layer's keys exactly as
/// a full-length layer's, only from ``origin(layer:sequence:)`` on: the arithmetic is the same
/// bit for bit.
///
/// **Capacity rule.** A batch of B tokens at p…p+B−1 needs the keys from p − W + 1 on, so a
/// window layer needs at least W − 1 + B positions; the buffer holds
/// `span = min(capacity, W − 1 + lookback + max(maxBatch, minimumRoom))`, where `maxBatch` is
/// the most tokens the decoder ever feeds a slot in one step (prompt chunks and decode inputs
/// with their speculative drafts alike: every step is at most the decoder's `maxBatch`),
/// `lookback` extra positions (``Window/defaultLookback``) let a slot resume a little before its
/// end, and ``Window/defaultMinimumRoom`` keeps small batches (decoding with `--batch 1`) from
/// compacting at every step: a compaction happens once per `max(maxBatch, minimumRoom)`
/// positions or so.
///
/// **Resuming.** A slot holding `count` positions can continue (or be cut back to) position p
/// only when its window layers still hold p − W + 1…p − 1: ``canResume(at:sequence:)``. That is
/// always true at 0 (a fresh start) and from `windowStart + W − 1` on, which after any step at
/// position q includes every p ≥ q − lookback: a speculative step's rollback (to a position at
/// or past the step's start) always can; reusing a shared prefix further back than that cannot,
/// and ``truncate(to:sequence:)`` then empties the slot instead.
///
/// Not Sendable: owned by one `Decoder`, which is used by one thread at a time.
package final class KVCache {
    /// Positions the cache can hold per slot (the context).
    package let capacity: Int
    /// Elements per position per layer (kvHeads × headDim).
    package let width: Int
    package let layerCount: Int
    /// Sequence slots: independent conversations sharing the model, each with `capacity` positions.
    package let sequences: Int
    /// Storage type: `.f16`, `.f32`, `.q8_0` or `.q4_0`.
    package let type: DType
    /// Elements per head (width = kvHeads × headDim).
    package let headDim: Int
    /// Bytes of one head of one position.
    package let headBytes: Int
    /// How window layers are stored (nil: every layer holds `capacity` positions).
    package let window: Window?
    /// Positions currently filled per slot (valid entries of slot `s` are 0..<counts[s]; a
    /// window layer holds those from `windowStarts[s]` on).
    package internal(set) var counts: [Int]
    /// Per slot, the first position window layers hold (0 without a ``window``).
    package internal(set) var windowStarts: [Int]
    /// Positions filled in slot 0 (the only slot of a single-sequence decoder).
    package internal(set) var count: Int {
        get { counts[0] }
        set { counts[0] = newValue }
    }
    private let keys: UnsafeMutableRawPointer
    private let values: UnsafeMutableRawPointer
    /// Positions each layer holds per slot (`capacity`, or a window layer's span).
    private let spans: [Int]
    /// Byte offset of each layer's slots in `keys` / `values`.
    private let layerOffsets: [Int]
    /// Whether each layer is a window layer.
    private let windowed: [Bool]

    /// Window-sized storage for sliding-window layers (see ``KVCache``).
    package struct Window: Sendable, Equatable {
        /// The attention window W: a position sees itself and the W − 1 before it.
        package let size: Int
        /// Which layers slide (one entry per layer).
        package let layers: [Bool]
        /// Positions a window layer holds per slot.
        package let span: Int
        /// Positions kept beyond the W − 1 a step needs when the buffer is compacted: a slot can
        /// resume up to this many positions before its end (a re-rendered chat turn).
        package let lookback: Int

        /// Positions kept beyond the window by default.
        package static let defaultLookback = 128
        /// The least room for new positions a compaction leaves by default, whatever the batch.
        package static let defaultMinimumRoom = 256

        /// The window storage for `size` and `layers`, fed batches of up to `maxBatch` tokens, in a
        /// cache of `capacity` positions:
        /// `span = min(capacity, size − 1 + lookback + max(maxBatch, minimumRoom))`.
        package init(
            size: Int, layers: [Bool], capacity: Int, maxBatch: Int, lookback: Int = Window.defaultLookback,
            minimumRoom: Int = Window.defaultMinimumRoom
        ) {
            self.size = max(1, size)
            self.layers = layers
            self.lookback = max(0, lookback)
            span = min(capacity, self.size - 1 + self.lookback + max(1, maxBatch, minimumRoom))
        }

        /// The window storage a decoder of `options` with `context` positions and batches of up
        /// to `maxBatch` tokens uses (nil: the model has no sliding window).
        package init?(options o: DecoderOptions, context: Int, maxBatch: Int) {
            guard let size = o.slidingWindow else { return nil }
            self.init(size: size, layers: (0..<o.layerCount).map(o.isSliding), capacity: context, maxBatch: maxBatch)
        }

        /// Positions a slot holds over `layerCount` layers in a cache of `capacity` positions
        /// (window layers at ``span``, the others at `capacity`).
        package func positions(layerCount: Int, capacity: Int) -> Int {
            (0..<layerCount).reduce(0) { $0 + ($1 < layers.count && layers[$1] ? span : capacity) }
        }
    }

    /// Allocates the whole cache. `type` must be `.f16`, `.f32`, `.q8_0` or `.q4_0`; `headDim`
    /// (default: `width`, one head) must divide `width`, and for the quantized types be a
    /// multiple of 32. With `window`, its layers hold `window.span` positions per slot.
    /// - Throws: `EngineError` `.invalidOption` for another type, or a head the type cannot block.
    package init(
        layers: Int, capacity: Int, width: Int, sequences: Int = 1, type: DType = .f16, headDim: Int? = nil,
        window: Window? = nil
    ) throws {
        guard type.isKVCacheType else {
            throw EngineError(.invalidOption, "the KV cache stores f16, f32, q8_0 or q4_0, not \(type.rawValue)")
        }
        let headDim = headDim ?? width
        guard headDim > 0, width % headDim == 0, let headBytes = type.kvHeadBytes(headDim: headDim) else {
            throw EngineError(
                .invalidOption,
                "a \(type.rawValue) KV cache needs heads of a multiple of 32 elements; this model's heads have \(headDim) (use --kv-type f16)")
        }
        self.headDim = headDim
        self.headBytes = headBytes
        guard sequences >= 1, sequences <= 1024 else {
            throw EngineError(.invalidOption, "sequence slots must be between 1 and 1024, got \(sequences)")
        }
        self.sequences = sequences
        counts = Array(repeating: 0, count: sequences)
        windowStarts = Array(repeating: 0, count: sequences)
        self.capacity = capacity
        self.width = width
        self.type = type
        layerCount = layers
        let window = window.flatMap { $0.layers.prefix(layers).contains(true) ? $0 : nil }
        self.window = window
        windowed = (0..<layers).map { l in window.map { l < $0.layers.count && $0.layers[l] } ?? false }
        spans = windowed.map { $0 ? window?.span ?? capacity : capacity }
        let rowBytes = (width / headDim) * headBytes
        var offsets: [Int] = []
        var offset = 0
        for span in spans {
            offsets.append(offset)
            offset += sequences * span * rowBytes
        }
        layerOffsets = offsets
        let bytes = max(offset, 1)
        // Huge pages where the OS gives them: a decode step reads every cached position's slice
        // of one head, and with 4 KiB pages each position costs a page walk.
        keys = allocateStreamedBuffer(byteCount: bytes)
        values = allocateStreamedBuffer(byteCount: bytes)
        keys.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
        values.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
    }

    deinit {
        keys.deallocate()
        values.deallocate()
    }

    /// Bytes the cache occupies (keys and values, every layer and slot, window layers at their span).
    package var byteCount: Int { 2 * sequences * spans.reduce(0, +) * rowBytes }

    /// Bytes from one position to the next.
    package var rowBytes: Int { (width / headDim) * headBytes }

    /// Bytes one position's keys and values take over all layers (what a token adds to the
    /// cache while it is inside every layer's window).
    package var bytesPerToken: Int { 2 * layerCount * rowBytes }

    /// Positions `layer` holds per slot (`capacity`, or ``Window/span`` for a window layer).
    package func span(layer: Int) -> Int { spans[layer] }

    /// Whether `layer` is stored window-sized.
    package func isWindowed(layer: Int) -> Bool { windowed[layer] }

    /// The first position `layer` holds for slot `sequence`: 0, or the slot's window start for a
    /// window layer. Its positions from there on are contiguous from ``key(_:_:sequence:)`` at it.
    @inline(__always)
    package func origin(layer: Int, sequence: Int = 0) -> Int { windowed[layer] ? windowStarts[sequence] : 0 }

    /// Byte offset of head `kvHead` within a position's row (a quantized head is one record).
    @inline(__always)
    package func headOffset(_ kvHead: Int) -> Int { kvHead * headBytes }

    /// Key vector of `layer` at `position` of slot `sequence` (`width` elements of `type`);
    /// a slot's positions are contiguous. `position` must be one the layer holds (from
    /// ``origin(layer:sequence:)`` on).
    @inline(__always)
    package func key(_ layer: Int, _ position: Int, sequence: Int = 0) -> UnsafeMutableRawPointer {
        keys + layerOffsets[layer] + (sequence * spans[layer] + position - origin(layer: layer, sequence: sequence)) * rowBytes
    }

    /// Value vector of `layer` at `position` of slot `sequence`.
    @inline(__always)
    package func value(_ layer: Int, _ position: Int, sequence: Int = 0) -> UnsafeMutableRawPointer {
        values + layerOffsets[layer] + (sequence * spans[layer] + position - origin(layer: layer, sequence: sequence)) * rowBytes
    }

    /// Stores a position's keys and values (Float in, converted to `type`; quantized head by head).
    /// `headElements` (default `headDim`) is the head size of a layer whose heads are narrower
    /// than the cache's (Gemma 4's sliding layers: 256 in a cache sized for 512): each head's
    /// elements, packed in `k`/`v`, go to the start of its slot (f16/f32 caches only).
    @inline(__always)
    package func store(
        layer: Int, position: Int, sequence: Int = 0, keys k: UnsafePointer<Float>, values v: UnsafePointer<Float>,
        headElements: Int? = nil
    ) {
        let keyRow = key(layer, position, sequence: sequence), valueRow = value(layer, position, sequence: sequence)
        if let e = headElements, e != headDim, !type.isQuantized {
            let elementBytes = headBytes / headDim
            for h in 0..<(width / headDim) {
                storeCached(k + h * e, type: type, count: e, into: keyRow + h * headDim * elementBytes)
                storeCached(v + h * e, type: type, count: e, into: valueRow + h * headDim * elementBytes)
            }
            return
        }
        if !type.isQuantized {
            storeCached(k, type: type, count: width, into: keyRow)
            storeCached(v, type: type, count: width, into: valueRow)
            return
        }
        for h in 0..<(width / headDim) {
            storeCached(k + h * headDim, type: type, count: headDim, into: keyRow + headOffset(h))
            storeCached(v + h * headDim, type: type, count: headDim, into: valueRow + headOffset(h))
        }
    }

    /// Whether slot `sequence` can continue at `position` (be cut back to it and fed from there):
    /// it holds that many positions and its window layers still hold the W − 1 before it. Always
    /// true at 0 and without a ``window``.
    package func canResume(at position: Int, sequence: Int = 0) -> Bool {
        guard position > 0 else { return position == 0 }
        guard position <= counts[sequence] else { return false }
        guard let window else { return true }
        return windowStarts[sequence] <= max(0, position - window.size + 1)
    }

    /// The earliest position after 0 that slot `sequence` can resume at (see
    /// ``canResume(at:sequence:)``); its count when it holds nothing further back.
    package func earliestResume(sequence: Int = 0) -> Int {
        guard let window, windowStarts[sequence] > 0 else { return min(1, counts[sequence]) }
        return min(counts[sequence], windowStarts[sequence] + window.size - 1)
    }

    /// Forgets positions of slot `sequence` from `position` on (they will be overwritten). When
    /// the slot cannot resume there (its window layers no longer hold what position `position`
    /// needs, ``canResume(at:sequence:)``), it forgets everything instead.
    package func truncate(to position: Int, sequence: Int = 0) {
        let p = max(0, min(counts[sequence], position))
        counts[sequence] = canResume(at: p, sequence: sequence) ? p : 0
        if counts[sequence] == 0 { windowStarts[sequence] = 0 }
    }

    /// Makes the window layers of slot `sequence` (holding positions up to `position`, where the
    /// next `count` are about to be stored) able to take positions `position..<position + count`:
    /// when they would run past the buffer, the positions from `position − (W − 1) − lookback`
    /// on move to its front and the older ones are forgotten. Nothing happens without a window.
    /// - Throws: `EngineError` `.invalidOption` when `count` is more than the buffer can ever
    ///   take beside the window (more than the `maxBatch` the window was sized for).
    package func makeRoom(sequence: Int, from position: Int, count: Int) throws {
        guard let window else { return }
        let start = windowStarts[sequence]
        guard position + count - start > window.span else { return }
        let newStart = max(start, position - (window.size - 1) - window.lookback)
        guard position + count - newStart <= window.span else {
            throw EngineError(
                .invalidOption,
                "a batch of \(count) tokens does not fit the \(window.span)-position window cache (it takes at most \(window.span - window.size + 1 - window.lookback) at a time)")
        }
        let keep = max(0, counts[sequence] - newStart)
        for layer in 0..<layerCount where windowed[layer] {
            let base = layerOffsets[layer] + sequence * spans[layer] * rowBytes
            let from = base + (newStart - start) * rowBytes
            memmove(keys + base, keys + from, keep * rowBytes)
            memmove(values + base, values + from, keep * rowBytes)
        }
        windowStarts[sequence] = newStart
    }

    /// Whether `layer` of slot `sequence` can take (or give) `count` consecutive positions from
    /// `position` on as one contiguous stretch of rows: they lie from its ``origin(layer:sequence:)``
    /// on and within its span. (Nothing is said about whether they hold anything yet.)
    package func holdsRows(layer: Int, from position: Int, count: Int, sequence: Int) -> Bool {
        guard layer >= 0, layer < layerCount, sequence >= 0, sequence < sequences, count >= 0 else { return false }
        let first = position - origin(layer: layer, sequence: sequence)
        return first >= 0 && first + count <= spans[layer]
    }

    /// The keys and values of `count` consecutive positions of `layer` from `position` on in
    /// slot `sequence`: two stretches of `count × rowBytes` bytes each, as the cache holds them
    /// (quantized types: one record per head, after ``HeadRotation`` where the decoder rotates),
    /// for copying rows out of and into a slot raw (the prompt cache). The positions must be
    /// ones the layer holds (``holdsRows(layer:from:count:sequence:)``).
    @inline(__always)
    package func rows(layer: Int, from position: Int, sequence: Int) -> (keys: UnsafeMutableRawPointer, values: UnsafeMutableRawPointer) {
        (key(layer, position, sequence: sequence), value(layer, position, sequence: sequence))
    }

    /// Makes slot `sequence` empty with its window layers starting at `windowStart` (0 without a
    /// ``window``), ready for rows to be written into it from outside (``rows(layer:from:sequence:)``)
    /// before ``adopt(count:sequence:)`` says how many it holds.
    package func prepareFill(sequence: Int, windowStart: Int) {
        counts[sequence] = 0
        windowStarts[sequence] = window == nil ? 0 : max(0, windowStart)
    }

    /// Declares that slot `sequence` holds `count` positions, written from outside after
    /// ``prepareFill(sequence:windowStart:)``: every full layer's rows 0..<count and every window
    /// layer's from the window start on.
    package func adopt(count: Int, sequence: Int) {
        counts[sequence] = max(0, min(count, capacity))
        if counts[sequence] == 0 { windowStarts[sequence] = 0 }
    }

    /// Copies the first `count` positions of slot `source` into slot `target` (a shared
    /// prefix: keys and values of a position depend only on the tokens up to it), leaving
    /// `target` holding exactly those positions. Window layers copy what they hold of them
    /// (and `target` takes `source`'s window start). When `source` cannot resume at `count`
    /// (``canResume(at:sequence:)``), nothing is copied and `target` ends up empty.
    /// - Returns: the positions `target` now holds (`count`, clamped to what `source` holds, or 0).
    @discardableResult
    package func copyPrefix(from source: Int, to target: Int, count n: Int) -> Int {
        var n = max(0, min(n, counts[source], capacity))
        if !canResume(at: n, sequence: source) { n = 0 }
        if source != target {
            let start = n == 0 ? 0 : windowStarts[source]
            for layer in 0..<layerCount {
                let first = windowed[layer] ? start : 0
                let rows = max(0, n - first)
                let from = layerOffsets[layer] + source * spans[layer] * rowBytes
                let to = layerOffsets[layer] + target * spans[layer] * rowBytes
                (keys + to).copyMemory(from: keys + from, byteCount: rows * rowBytes)
                (values + to).copyMemory(from: values + from, byteCount: rows * rowBytes)
            }
            windowStarts[target] = start
            counts[target] = n
        } else {
            truncate(to: n, sequence: target)
        }
        return n
    }
}
