/// A binary heap whose `pop` returns the element that precedes all others under
/// `precedes` (the merge queue of tokenizer.json BPE: lowest rank first).
struct BinaryHeap<Element> {
    private var items: [Element] = []
    private let precedes: (Element, Element) -> Bool

    init(by precedes: @escaping (Element, Element) -> Bool) {
        self.precedes = precedes
    }

    mutating func push(_ value: Element) {
        items.append(value)
        HeapOrder.siftUp(&items, from: items.count - 1, by: precedes)
    }

    mutating func pop() -> Element? {
        HeapOrder.pop(&items, by: precedes)
    }
}

/// The sift steps of an array-backed binary heap, shared by ``BinaryHeap`` and the SentencePiece
/// BPE's pair heap (which passes a literal comparison, inlined here, for its hot loop).
enum HeapOrder {
    /// Moves `items[index]` up until its parent precedes it (or it is the root).
    @inline(__always)
    static func siftUp<Element>(_ items: inout [Element], from index: Int, by precedes: (Element, Element) -> Bool) {
        var i = index
        while i > 0 {
            let parent = (i - 1) / 2
            guard precedes(items[i], items[parent]) else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    /// Moves `items[index]` down until it precedes both its children.
    @inline(__always)
    static func siftDown<Element>(_ items: inout [Element], from index: Int, by precedes: (Element, Element) -> Bool) {
        var i = index
        let count = items.count
        while true {
            let l = 2 * i + 1, r = l + 1
            var best = i
            if l < count && precedes(items[l], items[best]) { best = l }
            if r < count && precedes(items[r], items[best]) { best = r }
            if best == i { return }
            items.swapAt(i, best)
            i = best
        }
    }

    /// Removes and returns the root (the element that precedes all others), nil when empty.
    @inline(__always)
    static func pop<Element>(_ items: inout [Element], by precedes: (Element, Element) -> Bool) -> Element? {
        guard let top = items.first else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            siftDown(&items, from: 0, by: precedes)
        }
        return top
    }
}
