import Foundation
import HearthLocal
import Logging

/// What `hearth serve` shows while a model loads (the first request for a model, or the start;
/// a GGUF's repack can take seconds): log lines `loading MODEL` and `loaded MODEL in N s` at
/// info level, and on a terminal with text logs a status line (`loading MODEL… Ns`) until the
/// load ends. No status line when stderr is not a terminal or with `--log-format json` (a
/// carriage-return line would break one-object-per-line logs).
/// `@unchecked Sendable`: `lines` is guarded by `lock`.
final class ServeLoadProgress: @unchecked Sendable {
    private let logger: Logger
    private let statusLines: Bool
    private let lock = NSLock()
    private var lines: [String: StatusLine] = [:]

    init(logger: Logger, format: LogFormat) {
        self.logger = logger
        self.statusLines = format == .text && isatty(STDERR_FILENO) != 0
    }

    /// The observer for the model served as `name` (``LocalProvider/Configuration/loadObserver``).
    func observer(for name: String) -> @Sendable (LocalProvider.LoadEvent) -> Void {
        { [self] event in report(event, model: name) }
    }

    func report(_ event: LocalProvider.LoadEvent, model: String) {
        switch event {
        case .started:
            logger.info("loading \(model)", metadata: ["model": "\(model)"])
            guard statusLines else { return }
            let line = StatusLine(label: "loading \(model)")
            lock.withLock { lines[model] = line }
        case .loaded(let seconds):
            lock.withLock { lines.removeValue(forKey: model) }?.finish()
            logger.info("loaded \(model) in \(String(format: "%.1f", seconds)) s", metadata: ["model": "\(model)", "load_seconds": "\(String(format: "%.3f", seconds))"])
        case .failed:
            // The server logs the failure itself, with the cause.
            lock.withLock { lines.removeValue(forKey: model) }?.finish()
        }
    }
}
