import Foundation
import HearthLocal

/// Fair admission to the local model's sequence slots between clients.
///
/// The engine serves its own queue in arrival order, so a client that queued many requests
/// would make every other client wait behind all of them. The server therefore hands the
/// engine at most ``slots`` local requests at a time and holds the rest here. When a slot
/// frees, the next request is the oldest of the client that has the fewest requests running,
/// and among clients with equally many, the one served longest ago (never served counts as
/// longest): round-robin between the clients that wait, so a client that queues N requests
/// delays another client's next request by at most one answer per slot. A client alone is
/// served in arrival order (the plain server has one client: nothing changes for it).
///
/// A request may need several slots at once (`n` choices decode as `n` sequences): its turn
/// counts as that many, for the slots and for its client's share, and it goes when that many
/// are free — a smaller request behind it does not pass it (it would wait for ever behind a
/// stream of single ones).
///
/// A held request is still waiting for a slot, and is counted in `hearth_requests_waiting`
/// (``waitingCount``). A waiter whose task is cancelled (its client left, its deadline
/// passed, the server drains) leaves the queue at once.
final class FairQueue: @unchecked Sendable {
    // `@unchecked Sendable`: every mutable field is only touched under `lock`.

    /// Requests handed to the engine at once (its sequence slots).
    let slots: Int
    private let lock = NSLock()
    /// Turns held (requests handed to the engine and not yet ended), overall and per client.
    private var runningTotal = 0
    private var running: [String: Int] = [:]
    /// Waiting requests per client, oldest first.
    private var waiting: [String: [Waiter]] = [:]
    private var waitingTotal = 0
    /// When each client was last given a turn (a counter, not a time); forgotten once the
    /// client has nothing running or waiting.
    private var lastServed: [String: UInt64] = [:]
    private var served: UInt64 = 0
    private var arrivals: UInt64 = 0

    /// One held request.
    private final class Waiter: @unchecked Sendable {
        // `@unchecked Sendable`: `arrival` and `wait` are only touched under the queue's `lock`.
        let client: String
        /// Slots it takes (1 ... the queue's slots).
        let weight: Int
        /// Its place in arrival order (set when it joins the queue).
        var arrival: UInt64 = 0
        let wait = LockedWait<Turn>()

        init(client: String, weight: Int) {
            self.client = client
            self.weight = weight
        }
    }

    /// A request's right to be handed to the engine: hold it while the request runs, then
    /// ``end()`` it (or drop it) so the next waiting request can go.
    final class Turn: Sendable {
        let client: String
        /// Slots it holds.
        let weight: Int
        private let release: OnceAction

        fileprivate init(queue: FairQueue, client: String, weight: Int) {
            self.client = client
            self.weight = weight
            release = OnceAction { [weak queue] in queue?.finish(client, weight: weight) }
        }

        /// Gives the turn back (later calls do nothing).
        func end() { release.run() }
    }

    /// A queue handing out `slots` turns at once (at least one).
    init(slots: Int) { self.slots = max(1, slots) }

    /// Requests held here now (waiting for a turn).
    var waitingCount: Int { lock.withLock { waitingTotal } }

    /// Slots held now (a turn of several slots counts each).
    var runningCount: Int { lock.withLock { runningTotal } }

    /// Waits until `client`'s request, which needs `slots` sequence slots at once (its choices;
    /// at most the queue's slots count), may be handed to the engine.
    /// - Throws: `CancellationError` when the calling task is cancelled while it waits.
    func turn(for client: String, slots needed: Int = 1) async throws -> Turn {
        let waiter = Waiter(client: client, weight: min(max(1, needed), slots))
        return try await waiter.wait.wait(
            under: lock,
            enqueue: {
                arrivals += 1
                waiter.arrival = arrivals
                waiting[client, default: []].append(waiter)
                waitingTotal += 1
            },
            withdraw: {
                self.waiting[client]?.removeAll { $0 === waiter }
                if self.waiting[client]?.isEmpty == true { self.waiting[client] = nil }
                self.waitingTotal -= 1
                self.forgetIfIdle(client)
            },
            // Again after a withdrawal: a request of several slots that left may have held up smaller ones.
            dispatch: { self.dispatch() })
    }

    /// A turn ended: its slots go to the next waiting requests.
    private func finish(_ client: String, weight: Int) {
        lock.withLock {
            runningTotal -= weight
            let left = running[client, default: weight] - weight
            running[client] = left > 0 ? left : nil
            forgetIfIdle(client)
            dispatch()
        }
    }

    /// Hands free turns to waiting requests, fairest first. Called under `lock`.
    private func dispatch() {
        while runningTotal < slots {
            // The waiting client with the fewest running, then served longest ago, then whose
            // oldest request came first (clients and their waiters are few: a linear pick).
            var best: (client: String, rank: (Int, UInt64, UInt64))?
            for (client, queue) in waiting {
                guard let oldest = queue.first else { continue }
                let rank = (running[client] ?? 0, lastServed[client] ?? 0, oldest.arrival)
                if best.map({ rank < $0.rank }) ?? true { best = (client, rank) }
            }
            guard let pick = best, var queue = waiting[pick.client], let waiter = queue.first else { return }
            // The fairest request waits for as many free slots as it needs.
            guard runningTotal + waiter.weight <= slots else { return }
            queue.removeFirst()
            waiting[pick.client] = queue.isEmpty ? nil : queue
            waitingTotal -= 1
            runningTotal += waiter.weight
            running[pick.client, default: 0] += waiter.weight
            served += 1
            lastServed[pick.client] = served
            waiter.wait.grant(Turn(queue: self, client: pick.client, weight: waiter.weight))
        }
    }

    /// Drops what is remembered of a client that has nothing running or waiting. Under `lock`.
    private func forgetIfIdle(_ client: String) {
        if running[client] == nil && waiting[client] == nil { lastServed[client] = nil }
    }
}
