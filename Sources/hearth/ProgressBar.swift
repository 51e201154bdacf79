import Foundation

/// A one-line progress bar on stderr (only when stderr is a terminal).
/// `@unchecked Sendable`: updates are serialised by `lock`.
final class ProgressBar: @unchecked Sendable {
    private let label: String
    private let lock = NSLock()
    private var lastPercent = -1
    private let enabled = isatty(STDERR_FILENO) != 0
    private let started = Date()

    init(label: String) { self.label = label }

    /// Shows `fraction` (0…1) done.
    func update(_ fraction: Double) {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        let percent = Int((min(max(fraction, 0), 1) * 100).rounded(.down))
        guard percent != lastPercent else { return }
        lastPercent = percent
        let width = 30
        let filled = width * percent / 100
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let elapsed = Date().timeIntervalSince(started)
        FileHandle.standardError.write(Data("\r\(label) \(bar) \(percent)% \(String(format: "%.0fs", elapsed))".utf8))
    }

    /// Clears the line.
    func finish() {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
    }
}
