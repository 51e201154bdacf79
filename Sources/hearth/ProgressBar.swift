import Foundation
import HearthHub

/// A one-line progress bar on stderr (only when stderr is a terminal).
/// `@unchecked Sendable`: updates are serialised by `lock`.
final class ProgressBar: @unchecked Sendable {
    private let label: String
    private let lock = NSLock()
    private var lastPercent = -1
    private var lastDetail = ""
    private let enabled = isatty(STDERR_FILENO) != 0
    private let started = Date()

    init(label: String) { self.label = label }

    /// Shows `fraction` (0…1) done, and `detail` after the time (what runs now, e.g.
    /// "prompt 3 of 40, lookup"); redrawn when the percentage or the detail changes.
    func update(_ fraction: Double, detail: String = "") {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        let percent = Int((min(max(fraction, 0), 1) * 100).rounded(.down))
        guard percent != lastPercent || detail != lastDetail else { return }
        lastPercent = percent
        lastDetail = detail
        let width = 30
        let filled = width * percent / 100
        let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
        let elapsed = Date().timeIntervalSince(started)
        let tail = detail.isEmpty ? "" : " \(detail)"
        FileHandle.standardError.write(Data("\r\u{1B}[2K\(label) \(bar) \(percent)% \(String(format: "%.0fs", elapsed))\(tail)".utf8))
    }

    /// Clears the line.
    func finish() {
        guard enabled else { return }
        lock.lock()
        defer { lock.unlock() }
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
    }
}

/// Download progress for `hearth pull` and `--model NAME`: on a terminal, a bar per file with
/// bytes, rate and time left; otherwise one line per file when it is done (or found cached),
/// so logs stay readable. `@unchecked Sendable`: state is guarded by `lock`.
final class TransferProgress: @unchecked Sendable {
    private let label: String
    private let lock = NSLock()
    private let terminal: Bool
    private var started: [String: (time: Date, from: Int64)] = [:]
    private var lastDraw = Date.distantPast

    /// `label` prefixes each file name (the repository); `bars: false` (`--json`) keeps to the
    /// one line per file even on a terminal.
    init(label: String, bars: Bool = true) {
        self.label = label
        self.terminal = bars && isatty(STDERR_FILENO) != 0
    }

    /// Handles one event from the hub client.
    func report(_ event: HubProgress) {
        lock.lock()
        defer { lock.unlock() }
        switch event {
        case .cached(let path, let bytes):
            line("\(label)/\(path): already in the cache (\(Self.size(bytes)))")
        case .started(let path, let total, let resumedAt):
            started[path] = (Date(), resumedAt)
            if resumedAt > 0 { line("\(label)/\(path): resuming at \(Self.size(resumedAt)) of \(Self.size(total))") }
        case .advanced(let path, let done, let total):
            guard terminal, Date().timeIntervalSince(lastDraw) > 0.1 || done == total else { return }
            lastDraw = Date()
            let begin = started[path] ?? (Date(), 0)
            let elapsed = max(Date().timeIntervalSince(begin.time), 0.001)
            let rate = Double(done - begin.from) / elapsed
            let fraction = total > 0 ? Double(done) / Double(total) : 1
            let width = 24
            let filled = Int(Double(width) * fraction)
            let bar = String(repeating: "█", count: filled) + String(repeating: "░", count: width - filled)
            let eta = rate > 0 ? Self.duration(Double(total - done) / rate) : "?"
            let name = path.count > 40 ? "…" + path.suffix(39) : path
            FileHandle.standardError.write(Data(
                "\r\u{1B}[2K\(name) \(bar) \(Int(fraction * 100))% \(Self.size(done))/\(Self.size(total)) \(Self.size(Int64(rate)))/s ETA \(eta)".utf8))
        case .retrying(let path, let attempt, let delay, let reason):
            line("\(label)/\(path): \(reason); retrying in \(Self.duration(delay)) (attempt \(attempt + 1))")
        case .finished(let path, let bytes, let check):
            let begin = started[path] ?? (Date(), 0)
            let elapsed = max(Date().timeIntervalSince(begin.time), 0.001)
            line("\(label)/\(path): \(Self.size(bytes)), \(check) verified, \(Self.size(Int64(Double(bytes - begin.from) / elapsed)))/s")
        }
    }

    private func line(_ text: String) {
        FileHandle.standardError.write(Data(((terminal ? "\r\u{1B}[2K" : "") + text + "\n").utf8))
    }

    /// `241.4 MiB` (the CLI's one byte format, `formatBytes`).
    static func size(_ bytes: Int64) -> String { formatBytes(Int(clamping: bytes)) }

    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "?" }
        let s = Int(seconds.rounded())
        return s >= 3600 ? "\(s / 3600)h\(s % 3600 / 60)m" : s >= 60 ? "\(s / 60)m\(s % 60)s" : "\(s)s"
    }
}

/// A status line for a step with no measurable fraction (loading a model: opening, the GGUF
/// repack, the tokenizer): on a terminal, "LABEL… Ns" on stderr at once and redrawn every half
/// second until ``finish()`` clears it; nothing when stderr is not a terminal.
/// `@unchecked Sendable`: state is guarded by `lock`.
final class StatusLine: @unchecked Sendable {
    private let label: String
    private let lock = NSLock()
    private let started = Date()
    private var timer: DispatchSourceTimer?

    init(label: String) {
        self.label = label
        guard isatty(STDERR_FILENO) != 0 else { return }
        draw()
        let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        timer.schedule(deadline: .now() + 0.5, repeating: 0.5)
        timer.setEventHandler { [weak self] in self?.draw() }
        self.timer = timer
        timer.resume()
    }

    private func draw() {
        lock.lock()
        defer { lock.unlock() }
        FileHandle.standardError.write(Data("\r\(label)… \(String(format: "%.0fs", Date().timeIntervalSince(started)))".utf8))
    }

    /// Stops redrawing and clears the line.
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        guard let timer else { return }
        timer.cancel()
        self.timer = nil
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
    }
}
