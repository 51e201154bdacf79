import Foundation

#if canImport(Glibc)
import Glibc
#endif

enum ChatPTYError: Error, CustomStringConvertible {
    case spawn(String)
    case timeout(waitingFor: String, seen: String)

    var description: String {
        switch self {
        case .spawn(let message): return "spawn failed: \(message)"
        case .timeout(let needle, let seen): return "timed out waiting for \(needle.debugDescription); output so far:\n\(seen)"
        }
    }
}

/// The `hearth` binary in a pseudo-terminal of its own: a new session whose controlling
/// terminal is the pty, so Ctrl-C typed into it raises SIGINT exactly as in a real terminal.
final class ChatPTY {
    let pid: pid_t
    private let master: Int32
    private(set) var transcript = Data()
    /// Bytes of `transcript` already consumed by `expect`.
    private var consumed = 0
    private var reaped = false

    init(binary: URL, arguments: [String], environment: [String: String]) throws {
        // posix_openpt/grantpt/unlockpt/ptsname are hidden behind _XOPEN_SOURCE in Glibc's module,
        // so open the multiplexer and use its ioctls directly (Linux values, from <asm-generic/ioctls.h>).
        let TIOCGPTN: UInt = 0x8004_5430, TIOCSPTLCK: UInt = 0x4004_5431, TIOCSWINSZ: UInt = 0x5414
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard master >= 0, ioctl(master, TIOCSPTLCK, &unlock) == 0, ioctl(master, TIOCGPTN, &number) == 0 else {
            throw ChatPTYError.spawn("no pseudo-terminal")
        }
        let slavePath = "/dev/pts/\(number)"
        var size = winsize(ws_row: 40, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(master, TIOCSWINSZ, &size)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // After setsid (done first by glibc), opening the tty makes it the controlling terminal.
        posix_spawn_file_actions_addopen(&actions, 0, slavePath, O_RDWR, 0)
        posix_spawn_file_actions_adddup2(&actions, 0, 1)
        posix_spawn_file_actions_adddup2(&actions, 0, 2)
        posix_spawn_file_actions_addclose(&actions, master)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(0x80 | 0x04))  // POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF (glibc), not imported
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGTERM)
        posix_spawnattr_setsigdefault(&attributes, &defaults)

        let argv = ([binary.path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, binary.path, &actions, &attributes, argv, envp)
        guard status == 0 else { throw ChatPTYError.spawn(String(cString: strerror(status))) }
        self.pid = pid
    }

    deinit {
        if !reaped {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        close(master)
    }

    /// Types `text` (use "\r" for Enter, "\u{03}" for Ctrl-C, "\u{04}" for Ctrl-D).
    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    /// Reads whatever arrives within `timeout` seconds; returns the number of new bytes.
    @discardableResult
    func pump(_ timeout: Double) -> Int {
        var fds = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        guard poll(&fds, 1, Int32(max(0, timeout * 1000))) > 0 else { return 0 }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = read(master, &buffer, buffer.count)
        guard n > 0 else { return 0 }
        transcript.append(contentsOf: buffer[0..<n])
        return n
    }

    /// Waits for `needle` after what earlier calls consumed; returns the text up to and including it.
    @discardableResult
    func expect(_ needle: String, timeout: Double = 20) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let text = String(decoding: transcript[consumed...], as: UTF8.self)
            if let range = text.range(of: needle) {
                let upTo = String(text[..<range.upperBound])
                consumed += upTo.utf8.count
                return upTo
            }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { throw ChatPTYError.timeout(waitingFor: needle, seen: text) }
            pump(min(left, 0.05))
        }
    }

    /// Waits for the process to exit; nil if it is still running after `timeout`.
    func exitStatus(timeout: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            pump(0.02)
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                reaped = true
                // WIFEXITED / WEXITSTATUS, spelled out (the macros are not imported).
                return status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
            }
        }
        return nil
    }
}
