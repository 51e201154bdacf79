import Foundation

/// Which of several local models stay loaded, for a server that serves more than one
/// (`hearth serve --model A --model B --max-loaded N`), as Ollama keeps models resident: each
/// model loads on first use, and at most ``maxLoaded`` models are in memory at once — a model
/// that requests still use counts until the last of them lets it go.
///
/// Every use of a model holds it (``Hold``) from before its load until the use has ended: a
/// request holds its model while it is tokenized, while it waits for its turn and while it
/// generates. A use of a model that is loaded goes ahead at once; a use of a model that is not
/// loaded takes a free place, or makes one by unloading the least recently used model that
/// nothing holds. When every loaded model is held, it waits, in arrival order, and the least
/// recently used loaded model is let go: it takes no new holds (uses of it wait their turn
/// behind the one that needs its place) and is unloaded when its last hold ends. So a model
/// is never loaded twice, never beside more than `maxLoaded − 1` others, and a model in use
/// is never taken from under its requests. Should the use that needed the place leave (its
/// client went away), the model it was waiting for is kept and serves new uses again at once.
///
/// `@unchecked Sendable`: every mutable field is only touched under `lock`.
public final class ModelResidency: @unchecked Sendable {
    /// Models loaded at once, at least 1.
    public let maxLoaded: Int
    private let lock = NSLock()
    /// Models in memory or on their way there (a place each), least recently used first.
    private var placed: [ObjectIdentifier] = []
    private var providers: [ObjectIdentifier: Weak] = [:]
    /// Holds per model.
    private var holds: [ObjectIdentifier: Int] = [:]
    /// The loaded model let go to make room for the first waiting use of another (nil: none).
    private var evicting: ObjectIdentifier?
    /// Uses waiting for their model, in arrival order.
    private var waiting: [Waiter] = []
    private var unloadCount = 0
    private var loadCount = 0

    private struct Weak { weak var provider: LocalProvider? }

    /// One use waiting for its model.
    private final class Waiter: Sendable {
        let model: ObjectIdentifier
        /// Its wait, touched only under the residency's `lock`.
        let wait = LockedWait<Hold>()

        init(model: ObjectIdentifier) { self.model = model }
    }

    /// A use of one model: while it is held, the model stays loaded. ``end()`` it (or drop it)
    /// when the use is over.
    public final class Hold: Sendable {
        private let release: OnceAction

        fileprivate init(residency: ModelResidency, model: ObjectIdentifier) {
            release = OnceAction { [weak residency] in residency?.release(model) }
        }

        /// Lets the model go (later calls do nothing).
        public func end() { release.run() }
    }

    public init(maxLoaded: Int) { self.maxLoaded = max(1, maxLoaded) }

    /// Models unloaded to make room so far.
    public var unloads: Int { lock.withLock { unloadCount } }

    /// Places given to models that were not loaded so far (each one load).
    public var loads: Int { lock.withLock { loadCount } }

    /// Models in memory now, or loading, or held by a request: never more than ``maxLoaded``.
    public var loadedCount: Int { lock.withLock { placed.count } }

    /// Uses waiting for their model to have a place.
    public var waitingCount: Int { lock.withLock { waiting.count } }

    /// Waits until `provider` may be used (loaded or given a place to load in) and holds it.
    /// - Throws: `CancellationError` when the calling task is cancelled while it waits.
    func hold(_ provider: LocalProvider) async throws -> Hold {
        let id = ObjectIdentifier(provider)
        let waiter = Waiter(model: id)
        lock.withLock { providers[id] = Weak(provider: provider) }
        return try await waiter.wait.wait(
            under: lock, enqueue: { waiting.append(waiter) },
            withdraw: { self.waiting.removeAll { $0 === waiter } }, dispatch: { self.dispatch() })
    }

    /// A hold ended: a model nothing holds any more may make room for a waiting use.
    private func release(_ model: ObjectIdentifier) {
        lock.withLock {
            let left = (holds[model] ?? 1) - 1
            holds[model] = left > 0 ? left : nil
            // A model whose load failed takes no place (it is not in memory).
            if left <= 0, providers[model]?.provider?.isResident != true { placed.removeAll { $0 == model } }
            dispatch()
        }
    }

    /// Gives holds to the waiting uses that may go, unloading models nothing holds to make
    /// room. Under `lock` (a provider's own lock is taken inside it, never the other way round,
    /// so no use can start on a model between its losing its place and its unloading).
    private func dispatch() {
        while true {
            // The first waiting use of a model without a place decides which model is let go.
            let needy = waiting.first { !placed.contains($0.model) }
            evicting = nil
            if let needy {
                if placed.count < maxLoaded {
                    placed.append(needy.model)
                    loadCount += 1
                } else if let idle = placed.first(where: { holds[$0] == nil }) {
                    // A loaded model nothing holds makes room at once.
                    placed.removeAll { $0 == idle }
                    if providers[idle]?.provider?.unload() == true { unloadCount += 1 }
                    continue
                } else {
                    evicting = placed.first  // the least recently used: unloaded when its last hold ends
                }
            }
            // Every waiting use whose model has a place and is not being let go goes ahead.
            var granted = false
            for waiter in waiting where placed.contains(waiter.model) && waiter.model != evicting {
                granted = true
                holds[waiter.model, default: 0] += 1
                placed.removeAll { $0 == waiter.model }
                placed.append(waiter.model)  // now the most recently used
                waiter.wait.grant(Hold(residency: self, model: waiter.model))
            }
            waiting.removeAll { $0.wait.isDone }
            if !granted { return }
        }
    }
}

extension LocalProvider {
    /// Whether the model is loaded or loading.
    public var isResident: Bool {
        lock.withLock {
            switch state {
            case .loaded, .loading: return true
            case .idle, .failed: return false
            }
        }
    }

    /// Drops the loaded model so its memory can be returned; the next use loads it again.
    /// With a ``ModelResidency`` the residency decides when (never while a request holds it).
    /// Returns whether it was loaded.
    @discardableResult
    public func unload() -> Bool {
        lock.withLock {
            guard case .loaded = state else { return false }
            state = .idle
            return true
        }
    }
}
