import ArgumentParser
import Foundation

/// `HEARTH_*` environment variables as fallbacks for `hearth serve`'s options, as llama-server
/// takes `LLAMA_ARG_*` and ollama `OLLAMA_HOST`: `HEARTH_` + the long name in upper case with
/// `-` as `_` (`HEARTH_PORT=8080`, `HEARTH_CTX=8192`, `HEARTH_NO_WEB_UI=1`). An option given on
/// the command line wins over its variable. A flag's variable is `1`/`true`/`yes`/`on` (set) or
/// `0`/`false`/`no`/`off` (not set); a repeatable option's variable lists its values separated
/// by commas (`HEARTH_MODEL=a.gguf,b.gguf`). Two names keep their own meaning:
/// `HEARTH_API_KEY` (the key, read after `--api-key` and `--api-key-file`) and `HEARTH_MODELS`
/// (where the model registry is), so `--api-key` and `--models` have no fallback.
enum EnvironmentFallbacks {
    /// One option of a command as ArgumentParser describes it.
    struct Option: Equatable {
        var long: String
        var short: Character?
        var isFlag: Bool
        var isRepeating: Bool

        /// Whether a command-line word gives this option (`--long`, `--long=value`, `-s`,
        /// `-svalue`).
        func isNamed(by word: String) -> Bool {
            let longName = "--" + long
            if word == longName || word.hasPrefix(longName + "=") { return true }
            guard let short, !word.hasPrefix("--") else { return false }
            return word.hasPrefix("-" + String(short))
        }

        /// The variable that stands in for it.
        var variable: String { "HEARTH_" + long.uppercased().replacingOccurrences(of: "-", with: "_") }
    }

    /// Options whose variable means something else (see the type's documentation).
    static let excluded: Set<String> = ["api-key", "models", "help", "version"]

    /// The options of `command` that take a fallback, from ArgumentParser's own description of
    /// the command (its `--experimental-dump-help` JSON), so a new option gets one without a list
    /// to update.
    static func options(of command: ParsableCommand.Type) -> [Option] {
        guard let data = command._dumpHelp().data(using: .utf8),
            let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let description = root["command"] as? [String: Any],
            let arguments = description["arguments"] as? [[String: Any]]
        else { return [] }
        return arguments.compactMap { argument in
            let kind = argument["kind"] as? String
            guard kind == "option" || kind == "flag", let names = argument["names"] as? [[String: Any]],
                let long = names.first(where: { $0["kind"] as? String == "long" })?["name"] as? String,
                !excluded.contains(long)
            else { return nil }
            let short = (names.first { $0["kind"] as? String == "short" }?["name"] as? String)?.first
            return Option(long: long, short: short, isFlag: kind == "flag", isRepeating: argument["isRepeating"] as? Bool ?? false)
        }
    }

    /// `arguments` (a subcommand's, after its name) with each option that is absent but has its
    /// variable set in `environment` appended.
    /// - Throws: `ValidationError` for a flag's variable that is not a yes or no.
    static func apply(to arguments: [String], options: [Option], environment: [String: String]) throws -> [String] {
        var result = arguments
        // Words after `--` are positional values, never options.
        let given = arguments.prefix { $0 != "--" }
        for option in options {
            guard let value = environment[option.variable] else { continue }
            if given.contains(where: { option.isNamed(by: $0) }) { continue }
            if option.isFlag {
                switch value.lowercased() {
                case "1", "true", "yes", "on": result.append("--" + option.long)
                case "0", "false", "no", "off", "": break
                default: throw ValidationError("\(option.variable) must be 1, true, yes, on or 0, false, no, off (it sets --\(option.long))")
                }
            } else if option.isRepeating {
                for item in value.split(separator: ",") { result += ["--" + option.long, String(item)] }
            } else {
                result += ["--" + option.long, value]
            }
        }
        return result
    }
}
