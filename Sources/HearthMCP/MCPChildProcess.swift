import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A stdio server's process: started in its own process group with pipes for stdin, stdout and
/// stderr, watched by a thread that reaps it, and stopped with its whole group (a `uvx` or `npx`
/// launcher's children too). Every live group is also killed when the process exits (`atexit`),
/// so no server outlives hearth however the session ends short of SIGKILL — and then the server
/// reads end-of-file on its stdin, which ends stdio servers.
///
/// `@unchecked Sendable`: the mutable state (`status`, `stderrTail`) is guarded by `lock`; the
/// descriptors are set once in `init`.
final class MCPChildProcess: @unchecked Sendable {
    /// The process id, also its process group id.
    let pid: pid_t
    /// Our end of the server's stdin (we write requests here).
    let input: Int32
    /// Our end of the server's stdout (responses arrive here; ``MCPPipeTransport``'s reader closes it at end of file).
    let output: Int32
    private let lock = NSLock()
    private var status: Int32?
    private var stderrTail: [UInt8] = []
    /// Set when stderr reached its end (the server and whatever shared its stderr are gone).
    private var stderrEnded = false
    private var inputClosed = false
    private static let stderrKeep = 4096

    /// The variables a server inherits from hearth (as Claude Desktop does): enough to find
    /// programs and a home, never API keys from hearth's environment. The config's `env` adds to them.
    static let inherited = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ"]

    /// Starts `command` (looked up on `PATH`) with `arguments` and the inherited variables plus `environment`.
    /// - Throws: ``MCPServerError`` `.startFailed`.
    init(command: String, arguments: [String], environment: [String: String], server: String) throws(MCPServerError) {
        // A write to a server that died must fail with EPIPE, not kill hearth.
        signal(SIGPIPE, SIG_IGN)
        Self.installExitHook()
        var stdinPipe: [Int32] = [-1, -1], stdoutPipe: [Int32] = [-1, -1], stderrPipe: [Int32] = [-1, -1]
        guard pipe(&stdinPipe) == 0, pipe(&stdoutPipe) == 0, pipe(&stderrPipe) == 0 else {
            for fd in stdinPipe + stdoutPipe + stderrPipe where fd >= 0 { close(fd) }
            throw MCPServerError(.startFailed, server: server, message: "could not make pipes: \(String(cString: strerror(errno)))")
        }
        for fd in stdinPipe + stdoutPipe + stderrPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }

        var variables: [String: String] = [:]
        let current = ProcessInfo.processInfo.environment
        for name in Self.inherited { if let value = current[name] { variables[name] = value } }
        for (name, value) in environment { variables[name] = value }

        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?
        var attributes: posix_spawnattr_t?
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe[1], 2)
        // Its own process group (so the group can be stopped as one), default signal handling
        // (hearth chat ignores SIGINT and SIGTERM, and ignored signals survive exec) and no blocked signals.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        posix_spawnattr_setpgroup(&attributes, 0)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGQUIT] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var noMask = sigset_t()
        sigemptyset(&noMask)
        posix_spawnattr_setsigmask(&attributes, &noMask)

        let argv: [UnsafeMutablePointer<CChar>?] = ([command] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let result = posix_spawnp(&child, command, &actions, &attributes, argv, envp)
        close(stdinPipe[0])
        close(stdoutPipe[1])
        close(stderrPipe[1])
        guard result == 0 else {
            close(stdinPipe[1])
            close(stdoutPipe[0])
            close(stderrPipe[0])
            let shown = URL(fileURLWithPath: command).lastPathComponent
            throw MCPServerError(
                .startFailed, server: server,
                message: "could not start \(shown): \(String(cString: strerror(result))) (is it installed and on PATH?)")
        }
        pid = child
        input = stdinPipe[1]
        output = stdoutPipe[0]
        Self.register(child)
        let stderrFD = stderrPipe[0]
        Thread.detachNewThread { [self] in drainStderr(stderrFD) }
        Thread.detachNewThread { [self] in reap() }
    }

    /// Whether the process has exited, and how: `exited with status 3`, `killed by signal 9`.
    var exitDescription: String? {
        lock.withLock {
            guard let status else { return nil }
            let signal = status & 0x7f
            return signal == 0 ? "exited with status \((status >> 8) & 0xff)" : "was killed by signal \(signal)"
        }
    }

    /// The last lines the server wrote to stderr (at most `lines`), with every `secret` replaced by `***`.
    func stderrLines(_ lines: Int, redacting secrets: [String]) -> [String] {
        // A server that has exited may have written its last words just before: the reaper can
        // see the exit before the drain thread has read them, so wait (briefly) for stderr's end.
        let deadline = Date().addingTimeInterval(0.5)
        while lock.withLock({ status != nil && !stderrEnded }), Date() < deadline { usleep(2_000) }
        var text = lock.withLock { String(decoding: stderrTail, as: UTF8.self) }
        for secret in secrets where !secret.isEmpty { text = text.replacingOccurrences(of: secret, with: "***") }
        return Array(text.split(separator: "\n").map { String($0.prefix(300)) }.suffix(lines))
    }

    /// Stops the server: closes its stdin (a stdio server's cue to exit), then after up to
    /// `grace` seconds SIGTERM to its group, and SIGKILL if it is still there `grace` later.
    func terminate(grace: Double = 0.3) {
        lock.withLock {
            if !inputClosed {
                inputClosed = true
                close(input)
            }
        }
        if waitForExit(grace) == false {
            _ = sendSignal(-pid, SIGTERM)
            if waitForExit(grace) == false { _ = sendSignal(-pid, SIGKILL) }
        }
        // Whatever the leader started in its group goes too.
        _ = sendSignal(-pid, SIGKILL)
        _ = waitForExit(1)
        // Until no member of the group is left running (zombies, dead but not yet reaped by
        // init, do not count).
        let deadline = Date().addingTimeInterval(2)
        while Self.groupIsRunning(pid), Date() < deadline { usleep(5_000) }
        Self.unregister(pid)
    }

    /// Kills the group at once (a test, or a server that must go now).
    func kill(signal number: Int32 = SIGKILL) {
        _ = sendSignal(-pid, number)
    }

    /// Waits up to `seconds` for the process to be reaped; true when it was.
    @discardableResult
    func waitForExit(_ seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if lock.withLock({ status != nil }) { return true }
            usleep(10_000)
        }
        return lock.withLock { status != nil }
    }

    private func drainStderr(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, 4096) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            lock.withLock {
                stderrTail.append(contentsOf: buffer[0..<count])
                if stderrTail.count > Self.stderrKeep { stderrTail.removeFirst(stderrTail.count - Self.stderrKeep) }
            }
        }
        lock.withLock { stderrEnded = true }
        close(fd)
    }

    private func reap() {
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 {
            if errno != EINTR {
                raw = 0
                break
            }
        }
        lock.withLock { status = raw }
        Self.unregister(pid)
        // The leader is gone; its group (a launcher's children) goes with it.
        _ = sendSignal(-pid, SIGKILL)
    }

    // MARK: every live group, killed at exit

    nonisolated(unsafe) private static var live: Set<pid_t> = []
    private static let liveLock = NSLock()
    nonisolated(unsafe) private static var hookInstalled = false

    private static func register(_ pid: pid_t) { liveLock.withLock { _ = live.insert(pid) } }
    private static func unregister(_ pid: pid_t) { liveLock.withLock { _ = live.remove(pid) } }

    /// The process groups of servers still running.
    static var liveGroups: Set<pid_t> { liveLock.withLock { live } }

    /// Whether a process of the group `pgid` is running (not a zombie): from `/proc` on Linux,
    /// elsewhere whether the group exists at all.
    static func groupIsRunning(_ pgid: pid_t) -> Bool {
        #if os(Linux)
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return sendSignal(-pgid, 0) == 0 }
        for entry in entries where entry.first?.isNumber == true {
            guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After "pid (comm)": state, ppid, pgrp, …
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 2, fields[0] != "Z", Int32(fields[2]) == pgid { return true }
        }
        return false
        #else
        return sendSignal(-pgid, 0) == 0
        #endif
    }

    /// Kills every server's group now (SIGKILL). Called at exit; callable from a signal's
    /// dispatch handler before `exit`.
    static func killAll() {
        for pid in liveLock.withLock({ live }) { _ = sendSignal(-pid, SIGKILL) }
    }

    private static func installExitHook() {
        liveLock.withLock {
            guard !hookInstalled else { return }
            hookInstalled = true
            _ = atexit { MCPChildProcess.killAll() }
        }
    }
}

/// `kill(2)`, named apart from ``MCPChildProcess/kill(signal:)``.
@inline(__always)
private func sendSignal(_ pid: pid_t, _ signal: Int32) -> Int32 {
    #if canImport(Glibc)
    return Glibc.kill(pid, signal)
    #else
    return Darwin.kill(pid, signal)
    #endif
}
