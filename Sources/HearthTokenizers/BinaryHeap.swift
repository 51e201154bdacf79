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
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard precedes(items[i], items[parent]) else { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    mutating func pop() -> Element? {
        guard let top = items.first else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var best = i
                if l < items.count && precedes(items[l], items[best]) { best = l }
                if r < items.count && precedes(items[r], items[best]) { best = r }
                if best == i { break }
                items.swapAt(i, best)
                i = best
            }
        }
        return top
    }
}
