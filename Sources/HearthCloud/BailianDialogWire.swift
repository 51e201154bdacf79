import Foundation
import HearthProviders

/// Bailian's multimodal-dialog protocol (实时多模态交互协议): the client's directive frames and
/// the server's event frames.
///
/// Every client frame is `{"header":{"action","task_id","streaming":"duplex"},"payload":{…,"input":{"directive",…}}}`:
/// `run-task` for `Start`, `finish-task` for `Stop`, `continue-task` for the others. Server
/// frames are `{"header":{"event":"result-generated"|"task-failed",…},"payload":{"output":{"event",…}}}`;
/// binary frames carry audio.
enum BailianDialogWire {
    // MARK: Directives

    /// `Start` (run-task): the app, workspace and dialog to continue, text in and out.
    static func start(taskID: String, appID: String, workspaceID: String?, dialogID: String?, userID: String) -> Data {
        var input: [String: Any] = ["directive": "Start", "app_id": appID]
        if let workspaceID { input["workspace_id"] = workspaceID }
        if let dialogID { input["dialog_id"] = dialogID }
        let payload: [String: Any] = [
            "task_group": "aigc", "task": "multimodal-generation", "function": "generation", "model": "multimodal-dialog",
            "input": input,
            "parameters": [
                "upstream": ["type": "AudioOnly", "mode": "push2talk", "audio_format": "pcm"],
                "downstream": ["intermediate_text": "transcript,dialog", "audio_format": "pcm"],
                "client_info": ["user_id": userID],
            ],
        ]
        return frame(action: "run-task", taskID: taskID, payload: payload)
    }

    /// `RequestToRespond` with `type: "prompt"`: the model answers `text`.
    static func requestToRespond(taskID: String, dialogID: String?, text: String) -> Data {
        var input: [String: Any] = ["directive": "RequestToRespond", "type": "prompt", "text": text]
        if let dialogID { input["dialog_id"] = dialogID }
        return frame(action: "continue-task", taskID: taskID, payload: ["input": input])
    }

    /// A directive with no fields of its own: `RequestToSpeak`, `LocalRespondingStarted`,
    /// `LocalRespondingEnded`, `HeartBeat`, or `Stop` (sent as finish-task).
    static func directive(_ name: String, taskID: String, dialogID: String?) -> Data {
        var input: [String: Any] = ["directive": name]
        if let dialogID { input["dialog_id"] = dialogID }
        return frame(action: name == "Stop" ? "finish-task" : "continue-task", taskID: taskID, payload: ["input": input])
    }

    private static func frame(action: String, taskID: String, payload: [String: Any]) -> Data {
        let object: [String: Any] = [
            "header": ["action": action, "task_id": taskID, "streaming": "duplex"],
            "payload": payload,
        ]
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    }

    // MARK: Events

    /// What a server frame says, for the session.
    enum Event: Sendable {
        /// `Started`: the dialog's id (new, or the one Start named).
        case started(dialogID: String?)
        /// `DialogStateChanged`.
        case state(DialogState)
        /// `RespondingContent`: the whole answer so far, and whether it is complete.
        case content(text: String, finished: Bool)
        /// `RespondingEnded`: the answer (and its audio) is over.
        case respondingEnded
        /// `HeartBeat`, the answer to the client's.
        case heartBeat
        /// An `Error` event: the service failed this request; the connection stays.
        case failure(ProviderError)
        /// A `task-failed` header or a header `status_code` error: the service ends the connection.
        case fatal(ProviderError)
        /// Anything else (`RequestAccepted`, `RespondingStarted`, `Stopped`, speech events).
        case other(String)
    }

    struct Frame: Decodable {
        struct Header: Decodable {
            var event: String?
            var errorCode: Code?
            var errorMessage: String?
            var statusCode: Int?
            var statusName: String?
            var statusMessage: String?
        }
        struct Payload: Decodable {
            var output: Output?
        }
        struct Output: Decodable {
            var event: String?
            var dialogId: String?
            var state: String?
            var text: String?
            var finished: Bool?
            var errorCode: Code?
            var errorName: String?
            var errorMessage: String?
        }
        var header: Header
        var payload: Payload?
    }

    /// An error code written as a string (`"InvalidApiKey"`) or a number (`500`).
    struct Code: Decodable {
        var text: String
        var number: Int?

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int.self) {
                self.number = number
                text = String(number)
            } else {
                text = try container.decode(String.self)
                number = Int(text)
            }
        }
    }

    static let decoder = JSONDecoder.snakeCase

    /// Decodes one text frame; throws ``ProviderError/Code/decoding`` for anything else.
    static func event(_ data: Data, failures: HTTPFailureMapper) throws -> Event {
        let frame = try failures.decode(Frame.self, from: data, decoder: decoder, what: "A Bailian frame")
        let output = frame.payload?.output
        let reference = output?.dialogId.map { "dialog_id \($0)" }
        if frame.header.event == "task-failed" {
            let code = frame.header.errorCode?.text
            return .fatal(
                DashScopeErrors.error(
                    status: code.map(DashScopeErrors.status(forCode:)) ?? 500, code: code,
                    message: frame.header.errorMessage, reference: reference, service: "Bailian", failures: failures))
        }
        if let status = frame.header.statusCode, status != 200 {
            return .fatal(
                DashScopeErrors.error(
                    status: DashScopeErrors.status(forDialogCode: status), code: frame.header.statusName ?? String(status),
                    message: frame.header.statusMessage, reference: reference, service: "Bailian", failures: failures))
        }
        guard let output, let name = output.event else { return .other(frame.header.event ?? "") }
        switch name {
        case "Started": return .started(dialogID: output.dialogId)
        case "DialogStateChanged": return .state(DialogState(rawValue: output.state ?? ""))
        case "RespondingContent": return .content(text: output.text ?? "", finished: output.finished ?? false)
        case "RespondingEnded": return .respondingEnded
        case "HeartBeat": return .heartBeat
        case "Error":
            let status = output.errorCode?.number.map(DashScopeErrors.status(forDialogCode:))
                ?? output.errorName.map(DashScopeErrors.status(forCode:)) ?? 500
            let code = [output.errorName, output.errorCode?.text].compactMap { $0 }.joined(separator: " ")
            return .failure(
                DashScopeErrors.error(
                    status: status, code: code.isEmpty ? nil : code, message: output.errorMessage, reference: reference,
                    service: "Bailian", failures: failures))
        default: return .other(name)
        }
    }

    /// The error for a close frame from the server: 1008 (policy) is a refusal, 1011/1012 a
    /// server failure, 1013 "try again later" a rate limit, anything else a broken connection.
    static func closed(code: UInt16?, reason: String, failures: HTTPFailureMapper) -> ProviderError {
        let described = code.map { " (close code \($0)\(reason.isEmpty ? "" : ": \(reason)"))" } ?? ""
        let mapped: ProviderError.Code
        switch code {
        case 1008: mapped = .unauthorized
        case 1011: mapped = .server(status: 500)
        case 1012: mapped = .server(status: 503)
        case 1013: mapped = .rateLimited(retryAfter: nil)
        case 1009: mapped = .invalidRequest
        default: mapped = .network
        }
        return ProviderError(
            mapped, provider: failures.provider,
            message: failures.redactor("Bailian closed the dialog connection\(described)."))
    }
}
