import Foundation

/// The keys and values of prompts a generator has processed, kept beyond its sequence slots in
/// blocks of ``PromptCacheOptions/blockTokens`` tokens (docs/PROMPT-CACHE.md).
///
/// **Keys.** Block i of a prompt (tokens i·B ..< (i+1)·B) is keyed by a hash of the key of block
/// i − 1 and its own tokens, so a block's key names the whole prefix up to its end; the block
/// keeps its tokens, its parent's key and its index, and a lookup compares them before it uses
/// the block (a hash collision is a miss, never a wrong prefix). Any shared prefix is found: a
/// system prompt, a forked conversation, an earlier turn.
///
/// **Rows.** A block holds, for every layer the cache keeps full-length, the B key rows and B
/// value rows exactly as the KV cache stores them (f16, f32, or quantized records after the
/// decoder's head rotation: copied raw, never converted). A model with sliding-window layers
/// (``KVCache/Window``) keeps only a window-sized stretch of those layers per slot, so a block
/// holds their rows (its *window part*) only where the slot still had them when it was stored.
/// Restoring a prefix of m tokens needs every full-layer row before m and the window layers'
/// rows of the W − 1 positions before m: the blocks covering those must have window parts.
///
/// **Budget.** Block parts are evicted least recently used first until the bytes held fit
/// ``PromptCacheOptions/bytes``. Using or storing a chain touches its window parts, then its
/// blocks from the last to the first, so a block is never older than its descendants: a chain
/// loses its tail first and never keeps a block whose parent is gone. A window part is touched
/// only when it is used or stored, so the window rows of old turns (needed only to restore at
/// exactly that point) go before the blocks themselves.
///
/// LongRoPE models compute keys with other factors once a sequence is longer than the original
/// context (``Decoder/usesLongFactors(length:)``): chains computed each way are kept apart.
///
/// `@unchecked Sendable`: every property is touched only while holding `lock` (the scheduler
/// thread stores and restores; metrics read the statistics from other threads).
final class PromptCache: @unchecked Sendable {
    /// Which rows a block holds: from the KV cache's layout.
    struct Layout: Equatable {
        var blockTokens: Int
        /// Bytes of one position's keys (or values) in one layer.
        var rowBytes: Int
        /// Layers kept full-length (every block holds their rows).
        var fullLayers: [Int]
        /// Sliding-window layers kept window-sized (a block's window part).
        var windowLayers: [Int]
        /// The attention window W (nil without window layers).
        var windowSize: Int?
        /// Positions a window layer holds per slot.
        var windowSpan: Int

        init(cache: KVCache, blockTokens: Int) {
            self.blockTokens = blockTokens
            rowBytes = cache.rowBytes
            fullLayers = (0..<cache.layerCount).filter { !cache.isWindowed(layer: $0) }
            windowLayers = (0..<cache.layerCount).filter { cache.isWindowed(layer: $0) }
            windowSize = windowLayers.isEmpty ? nil : cache.window?.size
            windowSpan = windowLayers.first.map { cache.span(layer: $0) } ?? cache.capacity
        }

        /// Bytes of a block's full-layer rows (keys and values).
        var fullBytes: Int { 2 * fullLayers.count * blockTokens * rowBytes }
        /// Bytes of a block's window part.
        var windowBytes: Int { 2 * windowLayers.count * blockTokens * rowBytes }
        /// Bytes of one layer's keys (or values) in a block.
        var layerBytes: Int { blockTokens * rowBytes }

        /// The first block whose window part a restore to block `count` (count·B positions) needs:
        /// the one holding position count·B − (W − 1); `count` when there are no window layers.
        func firstWindowBlock(restoring count: Int) -> Int {
            guard let w = windowSize else { return count }
            return max(0, count * blockTokens - (w - 1)) / blockTokens
        }
    }

    /// Bytes of rows, freed when the last holder lets go (a block, or a disk write in flight).
    final class Rows: @unchecked Sendable {
        // `@unchecked Sendable`: written once when filled (before it is shared), then only read.
        let pointer: UnsafeMutableRawPointer
        let count: Int

        init(count: Int) {
            self.count = count
            pointer = UnsafeMutableRawPointer.allocate(byteCount: max(1, count), alignment: 64)
        }

        deinit { pointer.deallocate() }
    }

    /// One block: its chain links, tokens and rows.
    final class Block {
        let key: UInt64
        let parent: UInt64
        let index: Int
        let tokens: [Int32]
        /// Full-layer rows: per full layer, B key rows then B value rows.
        let full: Rows
        /// Window-layer rows, same order, when the block has them.
        var window: Rows?
        let windowBytes: Int

        init(key: UInt64, parent: UInt64, index: Int, tokens: [Int32], layout: Layout) {
            self.key = key
            self.parent = parent
            self.index = index
            self.tokens = tokens
            full = Rows(count: layout.fullBytes)
            windowBytes = layout.windowBytes
        }

        /// The window part, made (unfilled) when absent.
        func addWindow() -> UnsafeMutableRawPointer {
            if let window { return window.pointer }
            let part = Rows(count: windowBytes)
            window = part
            return part.pointer
        }

        /// Bytes held in memory.
        var bytes: Int { full.count + (window == nil ? 0 : windowBytes) + 4 * tokens.count }
    }

    /// A part of a block in the recency order.
    enum Part: Hashable {
        case full(UInt64)
        case window(UInt64)
    }

    /// A prefix found: the blocks to restore and how far.
    struct Hit {
        /// Blocks 0 ..< `count / B` of the chain.
        var blocks: [Block]
        /// Positions restored (a multiple of the block size).
        var count: Int
        /// The first block whose window part is restored (the slot's window layers start there).
        var firstWindowBlock: Int
        /// Per block, its window part as it was found (held here, so the rows outlive an
        /// eviction before the copy).
        var windows: [Rows?]
    }

    let layout: Layout
    let budget: Int
    private let lock = NSLock()
    private var blocks: [UInt64: Block] = [:]
    private var recency = RecencyList<Part>()
    private var statistics = PromptCacheStatistics()
    /// The disk tier, when there is one.
    let disk: PromptCacheDisk?

    /// A cache of `options.bytes` for a KV cache laid out as `cache` (nil when the options turn
    /// it off or the block size is out of range). `disk` is the disk tier, if any.
    init?(options: PromptCacheOptions, cache: KVCache, disk: PromptCacheDisk? = nil) {
        guard options.bytes > 0, (1...4096).contains(options.blockTokens) else { return nil }
        layout = Layout(cache: cache, blockTokens: options.blockTokens)
        budget = options.bytes
        statistics.budget = options.bytes
        self.disk = disk
    }

    /// The chain's root for prompts computed with (`longFactors`) or without LongRoPE's long factors.
    func root(longFactors: Bool) -> UInt64 {
        var hash = ContentHash()
        Array("hearth-prompt-cache".utf8).withUnsafeBytes { hash.add($0) }
        hash.add(layout.blockTokens)
        hash.add(longFactors ? 1 : 0)
        return hash.value
    }

    /// The key of a block of `tokens` following the block keyed `parent`.
    static func key(parent: UInt64, tokens: ArraySlice<Int32>) -> UInt64 {
        var hash = ContentHash()
        hash.add(Int(truncatingIfNeeded: parent))
        tokens.withUnsafeBytes { hash.add($0) }
        return hash.value
    }

    /// What the cache has done and holds (the disk tier's figures included).
    var currentStatistics: PromptCacheStatistics {
        var result = lock.withLock { statistics }
        if let disk { disk.addStatistics(to: &result) }
        return result
    }

    // MARK: - Lookup and restore

    /// The longest block-aligned prefix of `prompt` of at most `limit` tokens and more than
    /// `beyond` (what the live slots offer) that the cache can restore and `accept` allows
    /// (the decoder's LongRoPE checks). Counts a hit, or a miss when nothing of the prompt was
    /// held at all (`beyond` 0) though a block of it could have been; touches what it returns.
    /// Blocks memory lacks are read from the disk tier.
    func lookup(_ prompt: [Int32], limit: Int, beyond: Int, longFactors: Bool, accept: (Int) -> Bool) -> Hit? {
        let b = layout.blockTokens
        let most = max(0, min(limit, prompt.count)) / b
        guard most * b > beyond else { return nil }
        lock.lock()
        defer { lock.unlock() }
        var chain: [Block] = []
        var parent = root(longFactors: longFactors)
        for i in 0..<most {
            let tokens = prompt[(i * b)..<((i + 1) * b)]
            let key = Self.key(parent: parent, tokens: tokens)
            var found = blocks[key]
            if found == nil, let disk, let read = disk.read(key: key, parent: parent, index: i, tokens: tokens, layout: layout) {
                // Read back from disk: held in memory from now on (within the budget).
                guard makeRoom(read.bytes, protecting: Set(chain.map(\.key))) else { break }
                insert(read)
                statistics.schedulerDiskReads += 1
                found = read
            }
            guard let block = found, block.parent == parent, block.index == i, block.tokens.elementsEqual(tokens) else { break }
            chain.append(block)
            parent = key
        }
        var count = chain.count
        while count * b > beyond {
            let first = layout.firstWindowBlock(restoring: count)
            let windowsHeld = (first..<count).allSatisfy { chain[$0].window != nil }
            if windowsHeld && count * b - first * b <= layout.windowSpan && accept(count * b) { break }
            count -= 1
        }
        guard count * b > beyond else {
            // A miss: nothing of the prompt was held anywhere (a slot's prefix is not a miss).
            if beyond == 0 { statistics.misses += 1 }
            return nil
        }
        let hit = Hit(
            blocks: Array(chain.prefix(count)), count: count * b, firstWindowBlock: layout.firstWindowBlock(restoring: count),
            windows: chain.prefix(count).map(\.window))
        statistics.hits += 1
        statistics.hitTokens += hit.count
        if !layout.windowLayers.isEmpty {
            for i in hit.firstWindowBlock..<count { recency.touch(.window(chain[i].key)) }
        }
        for block in hit.blocks.reversed() { recency.touch(.full(block.key)) }
        return hit
    }

    /// Reads ahead, into memory, the blocks of `prompt`'s chain (as ``lookup(_:limit:beyond:longFactors:accept:)``
    /// walks it, up to `limit` tokens) that only the disk tier holds, so that the admission that
    /// follows finds them in memory instead of reading files on the scheduler thread. The
    /// files are read outside the cache's lock (lookups and stores of the running requests go
    /// on meanwhile); each block is checked as a lookup checks it and kept within the budget.
    /// Stops at the first block held nowhere. Returns the blocks read.
    @discardableResult
    func prefetch(_ prompt: [Int32], limit: Int, longFactors: Bool) -> Int {
        guard let disk else { return 0 }
        let b = layout.blockTokens
        let most = max(0, min(limit, prompt.count)) / b
        var parent = root(longFactors: longFactors)
        var chain: Set<UInt64> = []
        var read = 0
        for i in 0..<most {
            let tokens = prompt[(i * b)..<((i + 1) * b)]
            let key = Self.key(parent: parent, tokens: tokens)
            if !lock.withLock({ blocks[key] != nil }) {
                guard let block = disk.read(key: key, parent: parent, index: i, tokens: tokens, layout: layout) else { break }
                let kept = lock.withLock { () -> Bool in
                    if blocks[key] != nil { return true }
                    guard makeRoom(block.bytes, protecting: chain) else { return false }
                    insert(block)
                    statistics.prefetchedBlocks += 1
                    return true
                }
                guard kept else { break }
                read += 1
            }
            chain.insert(key)
            parent = key
        }
        return read
    }

    /// Copies `hit`'s rows into slot `sequence` of `cache`, leaving it holding `hit.count`
    /// positions. Full-layer rows of the first `keeping` positions are already in the slot (the
    /// slot's own tokens share them) and are not copied again. `isCancelled` is asked every few
    /// blocks; when it says so, the slot is left empty and false returned.
    func restore(_ hit: Hit, into cache: KVCache, sequence s: Int, keeping: Int, isCancelled: () -> Bool) -> Bool {
        let b = layout.blockTokens
        let windowStart = layout.windowLayers.isEmpty ? 0 : hit.firstWindowBlock * b
        cache.prepareFill(sequence: s, windowStart: windowStart)
        let layerBytes = layout.layerBytes
        for (n, block) in hit.blocks.enumerated() {
            if n % 16 == 15 && isCancelled() {
                cache.truncate(to: 0, sequence: s)
                return false
            }
            let position = block.index * b
            if position + b > keeping {
                for (j, layer) in layout.fullLayers.enumerated() {
                    let (keys, values) = cache.rows(layer: layer, from: position, sequence: s)
                    keys.copyMemory(from: block.full.pointer + 2 * j * layerBytes, byteCount: layerBytes)
                    values.copyMemory(from: block.full.pointer + (2 * j + 1) * layerBytes, byteCount: layerBytes)
                }
            }
            if block.index >= hit.firstWindowBlock, let window = hit.windows[n]?.pointer {
                for (j, layer) in layout.windowLayers.enumerated() {
                    let (keys, values) = cache.rows(layer: layer, from: position, sequence: s)
                    keys.copyMemory(from: window + 2 * j * layerBytes, byteCount: layerBytes)
                    values.copyMemory(from: window + (2 * j + 1) * layerBytes, byteCount: layerBytes)
                }
            }
        }
        cache.adopt(count: hit.count, sequence: s)
        return true
    }

    // MARK: - Storing

    /// Stores the whole blocks of `tokens` (the tokens slot `sequence` of `cache` holds, from
    /// position 0) that the cache does not hold yet, and the window parts of blocks the slot
    /// still has window rows for. Stops at a block that does not fit the budget (its
    /// ancestors stay) or whose key is taken by other tokens.
    func store(_ tokens: ArraySlice<Int32>, cache: KVCache, sequence s: Int, longFactors: Bool) {
        let b = layout.blockTokens
        let count = min(tokens.count, cache.counts[s]) / b
        guard count > 0 else { return }
        let windowStart = cache.windowStarts[s]
        let base = tokens.startIndex
        let layerBytes = layout.layerBytes
        lock.lock()
        defer { lock.unlock() }
        var chain: [Block] = []
        var written: [Block] = []
        var protected = Set<UInt64>()
        var parent = root(longFactors: longFactors)
        for i in 0..<count {
            let slice = tokens[(base + i * b)..<(base + (i + 1) * b)]
            let key = Self.key(parent: parent, tokens: slice)
            let position = i * b
            let windowRows =
                !layout.windowLayers.isEmpty && position >= windowStart
                && layout.windowLayers.allSatisfy { cache.holdsRows(layer: $0, from: position, count: b, sequence: s) }
            let block: Block
            if let existing = blocks[key] {
                guard existing.parent == parent, existing.index == i, existing.tokens.elementsEqual(slice) else { break }
                block = existing
                recency.touch(.full(key))
            } else {
                let fresh = Block(key: key, parent: parent, index: i, tokens: Array(slice), layout: layout)
                guard makeRoom(fresh.bytes, protecting: protected) else { break }
                for (j, layer) in layout.fullLayers.enumerated() {
                    let (keys, values) = cache.rows(layer: layer, from: position, sequence: s)
                    (fresh.full.pointer + 2 * j * layerBytes).copyMemory(from: keys, byteCount: layerBytes)
                    (fresh.full.pointer + (2 * j + 1) * layerBytes).copyMemory(from: values, byteCount: layerBytes)
                }
                insert(fresh)
                written.append(fresh)
                block = fresh
            }
            protected.insert(key)
            if windowRows && block.window == nil && makeRoom(layout.windowBytes, protecting: protected) {
                let window = block.addWindow()
                for (j, layer) in layout.windowLayers.enumerated() {
                    let (keys, values) = cache.rows(layer: layer, from: position, sequence: s)
                    (window + 2 * j * layerBytes).copyMemory(from: keys, byteCount: layerBytes)
                    (window + (2 * j + 1) * layerBytes).copyMemory(from: values, byteCount: layerBytes)
                }
                statistics.bytes += layout.windowBytes
                recency.touch(.window(key))
                if written.last !== block { written.append(block) }
            }
            chain.append(block)
            parent = key
        }
        // Recency: the window parts the slot holds, then the chain from its end to its start.
        for block in chain where block.window != nil && block.index * b >= windowStart { recency.touch(.window(block.key)) }
        for block in chain.reversed() { recency.touch(.full(block.key)) }
        statistics.blocks = blocks.count
        disk?.write(written, layout: layout)
    }

    /// Forgets every block held in memory (the disk tier keeps its files).
    func removeAll() {
        lock.withLock {
            blocks = [:]
            recency = RecencyList()
            statistics.bytes = 0
            statistics.blocks = 0
        }
    }

    /// Whether every block held (but a chain's first) has its parent held too (for tests: the
    /// recency order evicts a chain's tail before its head).
    var heldLinksAreWhole: Bool {
        lock.withLock { blocks.values.allSatisfy { $0.index == 0 || blocks[$0.parent] != nil } }
    }

    // MARK: - Budget

    /// Adds `block` (not yet held) to the map and the recency order as the newest.
    private func insert(_ block: Block) {
        blocks[block.key] = block
        statistics.bytes += block.bytes
        statistics.blocks = blocks.count
        recency.touch(.full(block.key))
        if block.window != nil { recency.touch(.window(block.key)) }
    }

    /// Evicts the least recently used parts until `bytes` more fit the budget. False (and
    /// nothing more evicted) when the oldest part left is a block in `protecting` (the chain
    /// being stored or read), or `bytes` alone is more than the budget.
    private func makeRoom(_ bytes: Int, protecting: Set<UInt64>) -> Bool {
        guard bytes <= budget else { return false }
        while statistics.bytes + bytes > budget {
            guard let oldest = recency.oldest else { return false }
            switch oldest {
            case .full(let key):
                guard !protecting.contains(key) else { return false }
                recency.remove(oldest)
                recency.remove(.window(key))
                if let block = blocks.removeValue(forKey: key) {
                    statistics.bytes -= block.bytes
                    statistics.evictedBytes += block.bytes
                }
            case .window(let key):
                // Window parts are never protected: a chain keeps working without the window
                // rows of its earlier blocks (they only serve a restore to exactly there).
                recency.remove(oldest)
                if let block = blocks[key], block.window != nil {
                    block.window = nil
                    statistics.bytes -= layout.windowBytes
                    statistics.evictedBytes += layout.windowBytes
                }
            }
            statistics.evictions += 1
        }
        statistics.blocks = blocks.count
        return true
    }
}

/// Keys in order of use, oldest first: touching moves a key to the newest end, in O(1).
struct RecencyList<Key: Hashable> {
    private struct Links {
        var older: Key?
        var newer: Key?
    }
    private var links: [Key: Links] = [:]
    /// The least recently touched key.
    private(set) var oldest: Key?
    private var newest: Key?

    var count: Int { links.count }

    /// Makes `key` the newest (adding it when absent).
    mutating func touch(_ key: Key) {
        remove(key)
        links[key] = Links(older: newest, newer: nil)
        if let newest { links[newest]?.newer = key } else { oldest = key }
        newest = key
    }

    /// Removes `key` if present.
    mutating func remove(_ key: Key) {
        guard let entry = links.removeValue(forKey: key) else { return }
        if let older = entry.older { links[older]?.newer = entry.newer } else { oldest = entry.newer }
        if let newer = entry.newer { links[newer]?.older = entry.older } else { newest = entry.older }
    }

    /// Keys from the oldest to the newest (for tests).
    var ordered: [Key] {
        var result: [Key] = []
        var next = oldest
        while let key = next {
            result.append(key)
            next = links[key]?.newer
        }
        return result
    }
}
