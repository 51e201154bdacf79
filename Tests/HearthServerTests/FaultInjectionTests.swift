import Foundation
import HearthServer
import HearthTestSupport
import Testing

/// A fault at each stage of the generation pipeline (parse, admit, render, run, settle), on each
/// endpoint, whole and streamed: the client gets the failure in its API's own error shape — an
/// error status with the API's error body before the answer starts, the API's in-stream error
/// event after — and the server stays healthy (its places given back, the next request served).
@Suite(.serialized) struct FaultInjectionTests {
    enum API: String, CaseIterable {
        case chat = "/v1/chat/completions", completions = "/v1/completions", messages = "/v1/messages", responses = "/v1/responses"

        func body(stream: Bool) -> [String: Any] {
            let user: [String: Any] = ["role": "user", "content": "Hello"]
            var body: [String: Any] = ["model": "tiny", "temperature": 0, "stream": stream]
            switch self {
            case .chat: body["messages"] = [user]; body["max_tokens"] = 3
            case .completions: body["prompt"] = "Hello"; body["max_tokens"] = 3
            case .messages: body["messages"] = [user]; body["max_tokens"] = 3
            case .responses: body["input"] = "Hello"; body["max_output_tokens"] = 3
            }
            return body
        }
    }

    /// The server-sent events of a streamed body: (event name or nil, data).
    static func frames(_ body: String) -> [(event: String?, data: String)] {
        body.components(separatedBy: "\n\n").compactMap { block in
            var event: String?
            var data: [String] = []
            for line in block.split(separator: "\n") {
                if line.hasPrefix("event: ") { event = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { data.append(String(line.dropFirst(6))) }
            }
            return data.isEmpty ? nil : (event, data.joined(separator: "\n"))
        }
    }

    static func object(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    /// Whether `body` is the API's error body: Anthropic's `{"type": "error", "error": {type,
    /// message}}`, OpenAI's `{"error": {message, type, param, code}}`.
    static func isErrorBody(_ body: [String: Any], _ api: API) -> Bool {
        guard let error = body["error"] as? [String: Any], error["message"] is String, error["type"] is String else { return false }
        if api == .messages { return body["type"] as? String == "error" }
        return error.keys.contains("param") && error.keys.contains("code")
    }

    /// A Responses stream's `response.failed` event with the response's error.
    static func isFailedResponse(_ frame: (event: String?, data: String)) -> Bool {
        let body = object(frame.data)
        let response = body["response"] as? [String: Any]
        let error = response?["error"] as? [String: Any]
        return frame.event == "response.failed" && body["type"] as? String == "response.failed"
            && response?["status"] as? String == "failed" && error?["message"] is String
    }

    @Test func aFaultAtEveryStageAnswersInTheAPIsOwnShape() async throws {
        let faults = FaultInjector()
        var options = ServerOptions(port: 0, alias: "tiny")
        options.faults = faults
        let harness = try await ServerHarness(options: options)
        try await withCleanup({ try? await harness.stop() }) {
            for stage in FaultInjector.Stage.allCases {
                faults.arm(stage)
                for api in API.allCases {
                    let whole = try await harness.send(api.rawValue, json: api.body(stream: false))
                    #expect(whole.status >= 400, "\(stage) \(api) whole: \(whole.status) \(whole.body)")
                    #expect(Self.isErrorBody(whole.json, api), "\(stage) \(api) whole: \(whole.body)")
                    #expect(!whole.body.contains("injected"), "the fault's own words stay in the log: \(whole.body)")

                    let streamed = try await harness.send(api.rawValue, json: api.body(stream: true))
                    let started = stage == .run || stage == .settle || (stage == .render && api == .responses)
                    if !started {
                        // Before the answer started: an error status, in the API's error body.
                        #expect(streamed.status >= 400, "\(stage) \(api) streamed: \(streamed.status) \(streamed.body)")
                        #expect(Self.isErrorBody(streamed.json, api), "\(stage) \(api) streamed: \(streamed.body)")
                        continue
                    }
                    // After: 200, and the stream ends with the API's error event.
                    #expect(streamed.status == 200, "\(stage) \(api) streamed: \(streamed.status)")
                    guard let last = Self.frames(streamed.body).last(where: { $0.data != "[DONE]" }) else {
                        Issue.record("\(stage) \(api): no frames in \(streamed.body)")
                        continue
                    }
                    switch api {
                    case .responses:
                        #expect(Self.isFailedResponse(last), "\(stage): \(streamed.body)")
                    case .messages:
                        #expect(last.event == "error" && Self.isErrorBody(Self.object(last.data), api), "\(stage): \(streamed.body)")
                    case .chat, .completions:
                        #expect(Self.isErrorBody(Self.object(last.data), api), "\(stage) \(api): \(streamed.body)")
                    }
                    if stage == .settle {
                        // The answer's text went out before its end failed to settle.
                        #expect(Self.frames(streamed.body).count >= 2, "\(stage) \(api): \(streamed.body)")
                    }
                }
            }
            // Disarmed: every endpoint answers, and every place was given back.
            faults.arm(nil)
            for api in API.allCases {
                let reply = try await harness.send(api.rawValue, json: api.body(stream: false))
                #expect(reply.status == 200, "\(api) after the faults: \(reply.body)")
            }
            #expect(harness.server.inFlightCount == 0)
            try await harness.stop()
        }
    }
}
