import ArgumentParser
import Foundation
import HearthMCP
import HearthProviders

/// `hearth chat --mcp FILE`: tools from MCP servers (docs/MCP.md).
struct ChatMCPOptions: ParsableArguments {
    @Option(
        name: .customLong("mcp"),
        help: "An mcpServers JSON file (Claude Desktop's and LM Studio's format: command, args, env or url, headers): its servers' tools are offered to the model, and each call runs after you confirm it. /mcp lists them. See docs/MCP.md.")
    var file: String?

    @Flag(name: .customLong("yes"), help: "With --mcp: run the model's tool calls without asking.")
    var yes = false

    @Option(name: .customLong("allow-tool"), help: "With --mcp: run this tool without asking (repeatable).")
    var allowTools: [String] = []

    @Option(
        name: .customLong("tool-choice"),
        help: "With --mcp: whether the model's first reply to each message must call a tool: auto (the default: the model decides), required, none, or a tool's name.")
    var toolChoice: String?

    @Option(name: .customLong("mcp-timeout"), help: "With --mcp: seconds a server has to answer a tool call.")
    var timeout: Double = 60

    @Option(
        name: .customLong("max-tool-rounds"),
        help: "With --mcp: replies that may call tools per message; the next reply must answer in text.")
    var maxToolRounds: Int = 8

    func validate() throws {
        if file == nil, yes || !allowTools.isEmpty || toolChoice != nil {
            throw ValidationError("--yes, --allow-tool and --tool-choice go with --mcp FILE")
        }
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--mcp-timeout takes seconds from 0 to 3600") }
        guard (1...64).contains(maxToolRounds) else { throw ValidationError("--max-tool-rounds takes 1 to 64") }
    }

    /// The chat's MCP state, or nil without --mcp.
    func make() throws -> ChatMCP? {
        guard let file else { return nil }
        let configuration: MCPConfiguration
        do { configuration = try MCPConfiguration.load(contentsOf: URL(fileURLWithPath: file)) } catch {
            throw ValidationError("--mcp: \(error)")
        }
        return ChatMCP(
            toolbox: MCPToolbox(configuration: configuration, options: MCPOptions(callTimeout: timeout)),
            fileName: URL(fileURLWithPath: file).lastPathComponent, yes: yes, allowed: Set(allowTools),
            choice: toolChoice.map(ChatMCP.choice), maxRounds: maxToolRounds)
    }
}

/// The MCP servers of one chat, what may run without asking, and the tool choice.
final class ChatMCP {
    let toolbox: MCPToolbox
    let fileName: String
    var yes: Bool
    var allowed: Set<String>
    /// The tool choice of the first reply to each message (nil: auto).
    var choice: ToolChoice?
    let maxRounds: Int
    /// The tools offered in the current turn.
    private(set) var tools: [MCPTool] = []

    init(toolbox: MCPToolbox, fileName: String, yes: Bool, allowed: Set<String>, choice: ToolChoice?, maxRounds: Int) {
        self.toolbox = toolbox
        self.fileName = fileName
        self.yes = yes
        self.allowed = allowed
        self.choice = choice
        self.maxRounds = maxRounds
    }

    /// `auto`, `required`, `none` or a tool's name.
    static func choice(_ text: String) -> ToolChoice {
        switch text.lowercased() {
        case "auto": return .auto
        case "required", "any": return .required
        case "none": return .disabled
        default: return .named(text)
        }
    }

    /// Starts the servers and says which run (and which failed, and why).
    func start(output: ChatOutput) {
        let spinner = output.spinner("starting MCP servers")
        let toolbox = self.toolbox
        let failures = (try? blocking { await toolbox.start() }) ?? []
        spinner.stop()
        refresh()
        let running = Set(tools.map(\.server))
        let names = toolbox.configuration.servers.map(\.name).filter { running.contains($0) }
        output.note(
            "mcp: \(tools.count) tool\(tools.count == 1 ? "" : "s") from \(names.isEmpty ? "no server" : names.joined(separator: ", ")) · /mcp lists them")
        for failure in failures { output.error("\(failure)") }
        if case .named(let name)? = choice, !tools.contains(where: { $0.name == name }) {
            output.error("--tool-choice \(name): no such tool; the tools are \(tools.map(\.name).joined(separator: ", "))")
            choice = nil
        }
    }

    /// Lists the running servers' tools again (a server may have changed them or died).
    @discardableResult
    func refresh() -> [ToolDefinition] {
        let toolbox = self.toolbox
        tools = (try? blocking { await toolbox.tools() }) ?? []
        return tools.map(\.toolDefinition)
    }

    /// Stops every server.
    func shutdown() {
        let toolbox = self.toolbox
        _ = try? blocking { await toolbox.shutdown() }
    }
}

extension ChatSession {
    /// Shows the model's tool calls, asks before running each (unless --yes or --allow-tool
    /// covers it) and returns the tool messages, and whether the person declined a call.
    func runToolCalls(_ calls: [ToolCall], mcp: ChatMCP) -> (messages: [ChatMessage], declined: Bool) {
        var messages: [ChatMessage] = []
        var declined = false
        for call in calls {
            let tool = mcp.tools.first { $0.name == call.name }
            let origin = tool.map { " (\($0.server))" } ?? ""
            output.info("tool call: \(call.name)\(origin) \(Self.clipped(call.arguments, 400))")
            guard tool != nil else {
                let text = "Error: there is no tool named \(call.name); the tools are \(mcp.tools.map(\.name).joined(separator: ", "))."
                output.error("the model called \(call.name), which no server offers")
                messages.append(.tool(text, callID: call.id))
                continue
            }
            guard confirm(call.name, mcp: mcp) else {
                output.note("not run")
                declined = true
                messages.append(.tool("The user declined to run this call.", callID: call.id))
                continue
            }
            let toolbox = mcp.toolbox
            let spinner = output.spinner("running \(call.name)")
            let outcome: Result<MCPToolbox.CallResult, Error>
            do {
                outcome = .success(try blocking { try await toolbox.call(call.name, arguments: call.arguments) })
            } catch {
                outcome = .failure(error)
            }
            spinner.stop()
            switch outcome {
            case .success(let result) where result.isError:
                output.error("\(call.name) failed: \(Self.clipped(result.text, 600))")
                messages.append(.tool("Error: \(result.text)", callID: call.id))
            case .success(let result):
                output.note("result: \(Self.clipped(result.text, 600))")
                messages.append(.tool(result.text, callID: call.id))
            case .failure(let error):
                output.error("\(call.name): \(error)")
                messages.append(.tool("Error: the tool could not run: \(error)", callID: call.id))
            }
        }
        return (messages, declined)
    }

    /// Whether to run `name`: --yes, the allow list, or the person's answer (y, n, or a for
    /// "always this tool"). Without a terminal, calls not allowed are not run.
    private func confirm(_ name: String, mcp: ChatMCP) -> Bool {
        if mcp.yes || mcp.allowed.contains(name) { return true }
        guard output.interactive else {
            output.note("\(name) needs confirmation: pass --yes or --allow-tool \(name) when stdin is not a terminal")
            return false
        }
        while true {
            switch editor.read(prompt: "run \(name)? [y]es, [n]o, [a]lways this tool: ") {
            case .line(let answer):
                switch answer.trimmingCharacters(in: .whitespaces).lowercased() {
                case "y", "yes": return true
                case "a", "always":
                    mcp.allowed.insert(name)
                    return true
                case "n", "no", "": return false
                default: continue
                }
            case .interrupt, .endOfInput: return false
            }
        }
    }

    static func clipped(_ text: String, _ limit: Int) -> String {
        let flat = text.replacingOccurrences(of: "\n", with: " ")
        return flat.count > limit ? String(flat.prefix(limit)) + "…" : flat
    }

    /// `/mcp`: the servers and their tools; `/mcp enable|disable NAME`; `/mcp choice auto|required|none|TOOL`.
    func mcpCommand(_ argument: String) {
        guard let mcp else {
            output.error("no MCP servers: start the chat with --mcp FILE (docs/MCP.md)")
            return
        }
        let parts = argument.split(separator: " ").map(String.init)
        let toolbox = mcp.toolbox
        switch parts.first?.lowercased() {
        case nil, "list"?:
            let states = (try? blocking { await toolbox.states() }) ?? []
            var lines = ["MCP servers from \(mcp.fileName):"]
            for state in states {
                switch state.status {
                case .running:
                    var line = "  \(state.summary) · running"
                    if let info = state.serverInfo { line += " · \(info)" }
                    line += " · \(state.tools.count) tool\(state.tools.count == 1 ? "" : "s")"
                    if !state.resources.isEmpty { line += ", \(state.resources.count) resource\(state.resources.count == 1 ? "" : "s")" }
                    if !state.prompts.isEmpty { line += ", \(state.prompts.count) prompt\(state.prompts.count == 1 ? "" : "s")" }
                    lines.append(line)
                    for tool in state.tools {
                        let asks = mcp.yes || mcp.allowed.contains(tool.name) ? "runs without asking" : "asks first"
                        lines.append("    \(tool.name) — \(Self.clipped(tool.description, 100)) (\(asks))")
                    }
                    if !state.resources.isEmpty { lines.append("    resources: \(state.resources.prefix(10).joined(separator: ", "))") }
                    if !state.prompts.isEmpty { lines.append("    prompts: \(state.prompts.prefix(10).joined(separator: ", "))") }
                case .stopped: lines.append("  \(state.summary) · disabled (/mcp enable \(state.name))")
                case .failed(let error): lines.append("  \(state.summary) · failed: \(error.message)")
                }
            }
            lines.append("tool choice: \(mcp.choice?.description ?? "auto") · /mcp enable|disable NAME · /mcp choice auto|required|none|TOOL")
            output.info(lines.joined(separator: "\n"))
        case "enable"?, "disable"?:
            guard parts.count == 2 else {
                output.error("usage: /mcp \(parts[0].lowercased()) SERVER")
                return
            }
            let enable = parts[0].lowercased() == "enable", name = parts[1]
            let spinner = output.spinner(enable ? "starting \(name)" : "stopping \(name)")
            do {
                try blocking { try await toolbox.setEnabled(name, enable) }
                spinner.stop()
                mcp.refresh()
                let count = mcp.tools.filter { $0.server == name }.count
                output.note(enable ? "\(name) enabled: \(count) tool\(count == 1 ? "" : "s")" : "\(name) disabled")
            } catch {
                spinner.stop()
                mcp.refresh()
                output.error("\(error)")
            }
        case "choice"?:
            guard parts.count == 2 else {
                output.info("tool choice: \(mcp.choice?.description ?? "auto")")
                return
            }
            let choice = ChatMCP.choice(parts[1])
            if case .named(let name) = choice, !mcp.refresh().contains(where: { $0.name == name }) {
                output.error("no tool named \(name); /mcp lists them")
                return
            }
            mcp.choice = choice
            output.note("tool choice: \(choice.description)")
        default:
            output.error("usage: /mcp, /mcp enable SERVER, /mcp disable SERVER, /mcp choice auto|required|none|TOOL")
        }
    }
}
