import Dispatch
import Foundation
import HearthProviders

#if canImport(Glibc)
import Glibc
#endif

/// Where the chat writes: answers to stdout; notes, stats and errors to stdout (dim) on a
/// terminal or to stderr as plain text when piped, so a script reading stdout gets answers only.
/// `@unchecked Sendable`: writes are serialised by `lock`.
final class ChatOutput: @unchecked Sendable {
    /// Whether stdin is a terminal: prompts, line editing, colours and spinners.
    let interactive: Bool
    /// Whether escape codes may be written.
    let styled: Bool
    private let lock = NSLock()
    /// Whether a reasoning part is being written (guarded by `lock`).
    private var reasoningOpen = false

    init(interactive: Bool) {
        self.interactive = interactive
        styled = interactive && isatty(STDOUT_FILENO) != 0 && ProcessInfo.processInfo.environment["NO_COLOR"] == nil
    }

    /// Reply text, written as it arrives.
    func answer(_ text: String) {
        lock.withLock { FileHandle.standardOutput.write(Data(text.utf8)) }
    }

    /// A piece of the model's reasoning, kept apart from the answer: dim on stdout in a styled
    /// terminal; otherwise on stderr, each part starting with `thinking: `, so stdout carries
    /// the answer only.
    func reasoning(_ text: String) {
        lock.withLock {
            let opening = !reasoningOpen
            reasoningOpen = true
            if styled {
                FileHandle.standardOutput.write(Data("\u{1B}[2m\(text)\u{1B}[0m".utf8))
            } else {
                FileHandle.standardError.write(Data(((opening ? "thinking: " : "") + text).utf8))
            }
        }
    }

    /// Ends the reasoning being written (nothing when none is): a line break, and on a terminal
    /// a blank line before the answer.
    func endReasoning() {
        lock.withLock {
            guard reasoningOpen else { return }
            reasoningOpen = false
            if styled {
                FileHandle.standardOutput.write(Data("\n\n".utf8))
            } else {
                FileHandle.standardError.write(Data("\n".utf8))
            }
        }
    }

    /// A note for the person: dim on a terminal, plain on stderr when piped.
    func note(_ text: String) { write(text, styledAs: "\u{1B}[2m\(text)\u{1B}[0m") }

    /// An error line (red on a terminal, stderr otherwise).
    func error(_ text: String) { write("error: \(text)", styledAs: "\u{1B}[31merror:\u{1B}[0m \(text)") }

    /// Plain text on stdout, for command output such as `/help` (stderr when piped).
    func info(_ text: String) { write(text.hasSuffix("\n") ? String(text.dropLast()) : text, styledAs: nil) }

    /// One line: `styled` (or `plain` when nil) on stdout in a styled terminal, else `plain` on stderr.
    private func write(_ plain: String, styledAs styled: String?) {
        lock.withLock {
            if self.styled {
                FileHandle.standardOutput.write(Data("\(styled ?? plain)\n".utf8))
            } else {
                FileHandle.standardError.write(Data("\(plain)\n".utf8))
            }
        }
    }

    /// Makes a spinner (drawn only on a terminal).
    func spinner(_ label: String, after delay: Double = 0) -> Spinner {
        Spinner(label: label, enabled: styled && isatty(STDERR_FILENO) != 0, delay: delay)
    }
}

/// A one-line spinner on stderr, cleared when stopped.
/// `@unchecked Sendable`: state changes happen on `queue`.
final class Spinner: @unchecked Sendable {
    private let queue = DispatchQueue(label: "hearth.spinner")
    private let timer: DispatchSourceTimer?
    private var frame = 0
    private var drawn = false
    private var stopped = false
    private let started = DispatchTime.now()

    init(label: String, enabled: Bool, delay: Double) {
        guard enabled else {
            timer = nil
            return
        }
        let frames = Array("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
        let timer = DispatchSource.makeTimerSource(queue: queue)
        self.timer = timer
        timer.schedule(deadline: .now() + delay, repeating: .milliseconds(100))
        timer.setEventHandler { [unowned self] in
            guard !self.stopped else { return }
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - self.started.uptimeNanoseconds) / 1e9
            let text = "\r\u{1B}[2m\(frames[self.frame % frames.count]) \(label) \(String(format: "%.1fs", elapsed))\u{1B}[0m\u{1B}[K"
            FileHandle.standardError.write(Data(text.utf8))
            self.frame += 1
            self.drawn = true
        }
        timer.resume()
    }

    /// Stops and erases the spinner; safe to call more than once.
    func stop() {
        guard let timer else { return }
        queue.sync {
            guard !stopped else { return }
            stopped = true
            timer.cancel()
            if drawn { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
        }
    }

    deinit { stop() }
}

/// What happened in one turn.
struct TurnResult {
    var text = ""
    var usage: Usage?
    var finishReason: FinishReason?
    var droppedMessages = 0
    var servedBy: String?
    var error: ProviderError?
    var cancelled = false
    var timeToFirstText: Double?
    var seconds: Double = 0
    /// The reply's reasoning parts (only the serving provider's: a failover starts them over),
    /// kept with the assistant message so the provider that made them gets them back.
    var reasoning: [ReasoningPart] = []
    /// Whether the next reasoning delta starts a part (its leading line breaks are dropped).
    var reasoningStarts = true
    /// The reply's tool calls (only when the request offered tools: `hearth chat --mcp`).
    var toolCalls = ToolCallCollector()
}

/// Runs one provider stream on a task while the main thread waits, so a signal handler can
/// cancel it. `@unchecked Sendable`: `task`, `result` and `busy` are guarded by `lock`.
final class TurnRunner: @unchecked Sendable {
    private let lock = NSLock()
    private var task: Task<Void, Never>?
    private var busy = false
    private var cancelRequested = false
    private var result = TurnResult()

    /// Whether a turn is running (signals then cancel it instead of exiting).
    var isBusy: Bool { lock.withLock { busy } }

    /// Cancels the running turn; returns false when none runs.
    @discardableResult
    func cancel() -> Bool {
        lock.withLock {
            guard busy else { return false }
            cancelRequested = true
            task?.cancel()
            return true
        }
    }

    /// Streams `request` from `provider`, writing text to `output` as it comes.
    func run(_ request: ChatRequest, on provider: any LanguageModelProvider, output: ChatOutput, spinner: Spinner)
        -> TurnResult
    {
        let start = DispatchTime.now()
        let done = DispatchSemaphore(value: 0)
        lock.withLock {
            busy = true
            cancelRequested = false
            result = TurnResult()
        }
        let stream = provider.stream(request)
        let task = Task { [self] in
            do {
                for try await event in stream {
                    if Task.isCancelled { break }
                    handle(event, output: output, spinner: spinner, start: start)
                }
            } catch let error as ProviderError {
                lock.withLock { result.error = error }
            } catch {
                lock.withLock { result.error = ProviderError.wrapping(error, provider: provider.id) }
            }
            done.signal()
        }
        lock.withLock {
            self.task = task
            if cancelRequested { task.cancel() }
        }
        done.wait()
        spinner.stop()
        return lock.withLock {
            busy = false
            self.task = nil
            var final = result
            final.seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
            if cancelRequested {
                final.cancelled = true
                final.error = nil
            }
            return final
        }
    }

    private func handle(_ event: ChatEvent, output: ChatOutput, spinner: Spinner, start: DispatchTime) {
        switch event {
        case .textDelta(let text):
            output.endReasoning()
            let first = lock.withLock { () -> Bool in
                guard !cancelRequested else { return false }
                let first = result.timeToFirstText == nil
                if first { result.timeToFirstText = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9 }
                result.text += text
                return first
            }
            if first { spinner.stop() }
            if lock.withLock({ !cancelRequested }) { output.answer(first ? Self.trimmedStart(text) : text) }
        case .usage(let usage): lock.withLock { result.usage = usage }
        case .finished(let reason):
            output.endReasoning()
            lock.withLock { result.finishReason = reason }
        case .servedBy(let id): lock.withLock { result.servedBy = id }
        case .switchedProvider(_, let to, _):
            output.endReasoning()
            lock.withLock {
                result.servedBy = to
                result.reasoning = []  // the failed provider's reasoning is not this reply's
                result.reasoningStarts = true
            }
        case .contextTruncated(let dropped): lock.withLock { result.droppedMessages = dropped }
        case .dialogState: break
        case .toolCall(let step):
            spinner.stop()
            output.endReasoning()
            lock.withLock { result.toolCalls.add(step) }
        case .reasoningDelta(let text):
            spinner.stop()
            let piece = lock.withLock { () -> String? in
                guard !cancelRequested else { return nil }
                let starts = result.reasoningStarts
                result.reasoningStarts = false
                return starts ? Self.trimmedStart(text) : text
            }
            if let piece, !piece.isEmpty { output.reasoning(piece) }
        case .reasoningEnded(let part):
            if part.isRedacted {
                spinner.stop()
                output.reasoning("(redacted thinking)")
            }
            output.endReasoning()
            lock.withLock {
                result.reasoning.append(part)
                result.reasoningStarts = true
            }
        }
    }

    private static func trimmedStart(_ text: String) -> String {
        String(text.drop { $0 == "\n" })
    }
}

/// SIGINT and SIGTERM through dispatch sources (no work in a real signal handler).
/// Ctrl-C cancels a running reply, or exits when idle; SIGTERM cancels and exits.
final class ChatSignals: @unchecked Sendable {
    // `@unchecked Sendable`: the sources are set once in init and only used on `queue`.
    private let queue = DispatchQueue(label: "hearth.signals")
    private var sources: [DispatchSourceSignal] = []

    init(runner: TurnRunner, output: ChatOutput) {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: queue)
        interrupt.setEventHandler {
            if !runner.cancel() { Self.exitCleanly(output: output) }
        }
        let terminate = DispatchSource.makeSignalSource(signal: SIGTERM, queue: queue)
        terminate.setEventHandler {
            runner.cancel()
            Self.exitCleanly(output: output)
        }
        // The terminal went away (a closed tmux pane or ssh session): leave as on SIGTERM, so
        // exit's hooks run (MCP servers are stopped there).
        signal(SIGHUP, SIG_IGN)
        let hangup = DispatchSource.makeSignalSource(signal: SIGHUP, queue: queue)
        hangup.setEventHandler {
            runner.cancel()
            Self.exitCleanly(output: output)
        }
        interrupt.resume()
        terminate.resume()
        hangup.resume()
        sources = [interrupt, terminate, hangup]
    }

    /// Restores the terminal and exits 0 (every completed turn is already on disk).
    static func exitCleanly(output: ChatOutput) -> Never {
        TerminalModes.shared.restore()
        if output.styled { FileHandle.standardOutput.write(Data("\u{1B}[0m\n".utf8)) }
        exit(0)
    }
}
