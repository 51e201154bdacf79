import Foundation
import HearthServer
import HearthTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A plain TCP connection to the loopback server on POSIX sockets: the test decides exactly
/// when the client goes away (`close`), with no HTTP client library in between.
final class RawConnection {
    private var descriptor: Int32

    struct SocketError: Error, CustomStringConvertible {
        var description: String
    }

    /// Connects to the loopback port; `receiveBuffer` sets SO_RCVBUF first (a tiny window: a
    /// client that reads slowly, or not at all).
    init(port: Int, receiveBuffer: Int? = nil) throws {
        #if canImport(Glibc)
        let kind = Int32(SOCK_STREAM.rawValue)
        #else
        let kind = SOCK_STREAM
        #endif
        descriptor = socket(AF_INET, kind, 0)
        guard descriptor >= 0 else { throw SocketError(description: "socket: errno \(errno)") }
        if var size = receiveBuffer.map(Int32.init) {
            _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close()
            throw SocketError(description: "connect: errno \(code)")
        }
    }

    deinit { close() }

    /// Sends all of `text`.
    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard n > 0 else { throw SocketError(description: "write: errno \(errno)") }
            sent += n
        }
    }

    /// Sends one POST with a JSON body (keep-alive, as HTTP clients do).
    func post(_ path: String, json: [String: Any], headers: [(String, String)] = []) throws {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: json), as: UTF8.self)
        let extra = headers.map { "\($0.0): \($0.1)\r\n" }.joined()
        try send(
            "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra
                + "Content-Length: \(body.utf8.count)\r\n\r\n" + body)
    }

    /// Reads what arrives within `seconds` (up to `limit` bytes); nil when the server closed
    /// the connection before sending anything.
    func receive(within seconds: Double, limit: Int = 1 << 16) -> String? {
        var data: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while data.count < limit, Date() < deadline {
            var descriptorSet = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptorSet, 1, 50)
            if ready <= 0 { if !data.isEmpty { break } else { continue } }
            let n = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if n <= 0 { return data.isEmpty ? nil : String(decoding: data, as: UTF8.self) }
            data += buffer[0..<n]
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Resets the connection (RST, not FIN): SO_LINGER with a zero timeout, then close.
    func reset() {
        guard descriptor >= 0 else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    /// Closes the socket: the client is gone.
    func close() {
        guard descriptor >= 0 else { return }
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #else
        _ = Darwin.close(descriptor)
        #endif
        descriptor = -1
    }
}

extension ServerTests {
    /// Polls a metric until it has `value` or `seconds` pass; returns the last value read.
    static func waitFor(
        _ harness: ServerHarness, _ name: String, is value: Double, within seconds: Int = 10, headers: [(String, String)] = []
    ) async throws -> Double? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var current: Double?
        while ContinuousClock.now < deadline {
            current = try await harness.metric(name, headers: headers)
            if current == value { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        return current
    }

    /// A client that drops a non-streaming request mid-generation — when nothing has been written
    /// to it yet — stops its sequence: the running count returns to 0 long before the requested
    /// tokens could have been generated, the request counts as 499, and the next request is correct.
    @Test func clientDisconnectCancelsANonStreamingGeneration() async throws {
        let harness = try await ServerHarness(context: 32768, parallel: 1)
        try await withCleanup({ try? await harness.stop() }) {
            let expected = try await harness.send(
                "/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "max_tokens": 6, "temperature": 0])
            #expect(expected.status == 200)

            let connection = try RawConnection(port: harness.port)
            try connection.post(
                "/v1/chat/completions",
                json: [
                    "model": "tiny", "messages": [["role": "user", "content": "Tell me a long story."]], "max_tokens": 32000, "stream": false,
                    "temperature": 1, "seed": 3, "min_p": 0, "top_k": 0, "ignore_eos": true,
                ])
            // Generating: the sequence holds the only slot.
            #expect(try await Self.waitFor(harness, "hearth_requests_running", is: 1) == 1)
            connection.close()
            let closed = ContinuousClock.now
            // The server's count and the scheduler's running count (the sequence slot) both return to 0.
            let admitted = try await Self.waitFor(harness, "hearth_requests_admitted", is: 0)
            let running = try await Self.waitFor(harness, "hearth_requests_running", is: 0)
            let elapsed = ContinuousClock.now - closed
            #expect(admitted == 0)
            #expect(running == 0)
            #expect(elapsed < .seconds(2), "the slot was freed \(elapsed) after the client left")
            // 499: the generation was cut short (a natural end would have been counted as 200).
            #expect(try await Self.waitFor(harness, #"hearth_requests_total{endpoint="/v1/chat/completions",status="499"}"#, is: 1) == 1)
            #expect(try await harness.metric(#"hearth_requests_total{endpoint="/v1/chat/completions",status="200"}"#) == 1)
            // The sequence stopped early: its slot holds far fewer than prompt + 32000 tokens.
            let usage = try #require(try await harness.metric("hearth_kv_cache_usage_ratio"))
            #expect(usage < 0.9, "cache usage \(usage): the generation ran on after the client left")

            let next = try await harness.send(
                "/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "max_tokens": 6, "temperature": 0])
            #expect(next.status == 200)
            #expect(next.json["choices"] != nil)
            #expect(next.body.contains(
                ((expected.json["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any])?["content"] as? String ?? "<none>"))
            try await harness.stop()
        }
    }

    /// A client that leaves while its request waits for a slot gives up its place in the queue;
    /// the request holding the slot is untouched and completes.
    @Test func clientDisconnectWhileQueuedFreesItsPlace() async throws {
        let harness = try await ServerHarness(context: 32768, parallel: 1)
        try await withCleanup({ try? await harness.stop() }) {
            // ignore_eos: the running request holds the slot whatever is sampled, for 12,000 tokens
            // (about 9 s on the tiny model here: long enough to queue and leave, short enough to wait for).
            let long = #"{"model":"tiny","messages":[{"role":"user","content":"Tell me a long story."}],"max_tokens":12000,"stream":false,"#
                + #""temperature":1,"seed":3,"min_p":0,"top_k":0,"ignore_eos":true}"#
            let running = Task { try await harness.send(.POST, "/v1/chat/completions", body: long) }
            #expect(try await Self.waitFor(harness, "hearth_requests_running", is: 1) == 1)
            let queued = try RawConnection(port: harness.port)
            try queued.post("/v1/chat/completions", json: parse(long))
            #expect(try await Self.waitFor(harness, "hearth_requests_waiting", is: 1) == 1)
            queued.close()
            #expect(try await Self.waitFor(harness, "hearth_requests_waiting", is: 0) == 0)
            #expect(try await Self.waitFor(harness, #"hearth_requests_total{endpoint="/v1/chat/completions",status="499"}"#, is: 1) == 1)
            #expect(try await harness.metric("hearth_requests_running") == 1, "the running request was disturbed")
            let reply = try await running.value
            #expect(reply.status == 200)
            let usage = reply.json["usage"] as? [String: Any]
            #expect(usage?["completion_tokens"] as? Int ?? 0 > 0)
            #expect(try await Self.waitFor(harness, "hearth_requests_admitted", is: 0) == 0)
            try await harness.stop()
        }
    }
}

extension GatewayTests {
    /// Through the gateway too: a non-streaming answer from the local route whose client leaves
    /// mid-generation stops at once, is recorded as 499, and the next request is answered.
    @Test func clientDisconnectCancelsANonStreamingGatewayAnswer() async throws {
        let s = try await Self.setup(context: 32768)
        try await withCleanup({ try? await s.stop() }) {
            let connection = try RawConnection(port: s.harness.port)
            var body = Self.chat("local", "Tell me a long story.", maxTokens: 32000, temperature: 1)
            body["seed"] = 3
            body["min_p"] = 0
            body["top_k"] = 0
            body["ignore_eos"] = true  // runs on whatever is sampled until the client leaves
            try connection.post("/v1/chat/completions", json: body, headers: [("Authorization", "Bearer \(Self.opsKey)")])
            let admin = [("authorization", "Bearer \(Self.opsKey)")]
            #expect(try await ServerTests.waitFor(s.harness, "hearth_requests_running", is: 1, headers: admin) == 1)
            connection.close()
            let closed = ContinuousClock.now
            #expect(try await ServerTests.waitFor(s.harness, "hearth_requests_admitted", is: 0, headers: admin) == 0)
            #expect(try await ServerTests.waitFor(s.harness, "hearth_requests_running", is: 0, headers: admin) == 0)
            let elapsed = ContinuousClock.now - closed
            #expect(elapsed < .seconds(2), "the slot was freed \(elapsed) after the client left")
            #expect(
                try await ServerTests.waitFor(s.harness, #"hearth_requests_total{endpoint="/v1/chat/completions",status="499"}"#, is: 1, headers: admin) == 1)
            let next = try await s.send("/v1/chat/completions", Self.chat("local", "Hello", maxTokens: 3), key: Self.opsKey)
            #expect(next.status == 200 && Self.usage(next).completion > 0)
            try await s.stop()
        }
    }
}
