import Foundation
import HearthJSON

/// The `quantization` object of an MLX checkpoint's `config.json`, as `mlx_lm.convert` writes it:
///
/// ```json
/// "quantization": {"group_size": 64, "bits": 4, "mode": "affine",
///                  "model.layers.0.mlp.down_proj": {"group_size": 64, "bits": 8},
///                  "lm_head": false}
/// ```
///
/// The top-level `group_size`/`bits`/`mode` are the defaults; any other key is a module path
/// (the tensor name without `.weight`) whose value overrides them with an object, or says
/// `true` (use the defaults) / `false` (not quantized). mlx-lm writes the same object under
/// `quantization_config` too; either key is accepted, `quantization` first.
package struct MLXQuantizationConfig: Sendable, Equatable {
    /// How one module is quantized.
    package struct Parameters: Sendable, Equatable, CustomStringConvertible {
        /// Consecutive elements of a row sharing one scale and bias.
        package var groupSize: Int
        /// Bits per element.
        package var bits: Int
        /// MLX's quantization mode; Hearth runs `affine` (w = scale·q + bias).
        package var mode: String

        /// Parameters as written in config.json (validated where a tensor uses them).
        package init(groupSize: Int, bits: Int, mode: String = "affine") {
            self.groupSize = groupSize
            self.bits = bits
            self.mode = mode
        }

        package var description: String { "\(mode) \(bits)-bit, group \(groupSize)" }
    }

    /// A per-module entry.
    package enum Entry: Sendable, Equatable {
        /// Quantized with these parameters (`{...}` or `true`, which means the defaults).
        case quantized(Parameters)
        /// Left in its float type (`false`).
        case unquantized
    }

    /// Defaults for modules without an entry.
    package var defaults: Parameters
    /// Entries keyed by module path (`model.layers.3.self_attn.qkv_proj`, `lm_head`, …).
    package var overrides: [String: Entry]
    /// The config key it was read from (`quantization` or `quantization_config`).
    package var key: String

    /// Settings with `defaults` for every module except those in `overrides`.
    package init(defaults: Parameters, overrides: [String: Entry] = [:], key: String = "quantization") {
        self.defaults = defaults
        self.overrides = overrides
        self.key = key
    }

    /// What applies to `module` (a tensor name without `.weight`).
    package func entry(forModule module: String) -> Entry { overrides[module] ?? .quantized(defaults) }

    /// mlx-lm's defaults for the affine mode.
    static let defaultGroupSize = 64
    static let defaultBits = 4

    /// Reads the MLX quantization settings of a `config.json`, or nil when it has none.
    /// Throws when the object is malformed, or when `quantization_config` names a method
    /// other than MLX's (GPTQ, AWQ, bitsandbytes…), which Hearth does not read.
    package static func parse(configJSON data: Data, path: String) throws -> MLXQuantizationConfig? {
        // HearthJSON keeps `true` and `1` apart (JSONSerialization's NSNumbers do not on Linux).
        guard let object = try? JSON.parse(utf8: Array(data)), case .object = object else { return nil }
        let key: String
        let value: JSON
        if let q = object["quantization"], q != .null {
            (key, value) = ("quantization", q)
        } else if let q = object["quantization_config"], q != .null {
            (key, value) = ("quantization_config", q)
        } else {
            return nil
        }
        guard case .object(let members) = value else {
            throw FormatError(.invalidValue, "must be an object", path: path, key: key)
        }
        if let method = value["quant_method"] {
            // A string quoted ('gptq'), other values as JSON text.
            let name = method.stringValue.map { "'\($0)'" } ?? method.serialized
            throw FormatError(
                .unsupportedDType, "quantization method \(name) is not supported", path: path,
                key: "\(key).quant_method",
                remedy: "Hearth reads MLX affine checkpoints (mlx_lm.convert -q) and float checkpoints; use one of those")
        }
        let defaults = try parameters(value, fallback: nil, path: path, key: key)
        var overrides: [String: Entry] = [:]
        for (name, entry) in members where !["group_size", "bits", "mode"].contains(name) {
            switch entry {
            case .object:
                overrides[name] = .quantized(try parameters(entry, fallback: defaults, path: path, key: "\(key).\(name)"))
            case .bool(let flag):
                overrides[name] = flag ? .quantized(defaults) : .unquantized
            default:
                break  // other values (under unknown keys) carry no per-module settings
            }
        }
        return MLXQuantizationConfig(defaults: defaults, overrides: overrides, key: key)
    }

    private static func parameters(_ dict: JSON, fallback: Parameters?, path: String, key: String) throws
        -> Parameters
    {
        func int(_ name: String, _ fallbackValue: Int) throws -> Int {
            guard let item = dict[name] else { return fallbackValue }
            guard case .number(let number) = item, let v = number.int else {
                throw FormatError(.invalidValue, "must be an integer", path: path, key: "\(key).\(name)")
            }
            return v
        }
        let mode: String
        switch dict["mode"] {
        case nil: mode = fallback?.mode ?? "affine"
        case .string(let m): mode = m
        default: throw FormatError(.invalidValue, "must be a string", path: path, key: "\(key).mode")
        }
        return Parameters(
            groupSize: try int("group_size", fallback?.groupSize ?? defaultGroupSize),
            bits: try int("bits", fallback?.bits ?? defaultBits), mode: mode)
    }
}
