import HearthFormats
import HearthTokenizers

/// Qwen3 dense models (`Qwen3ForCausalLM`, GGUF `qwen3`): Qwen2's layout and config keys
/// without the q/k/v biases (`attention_bias`, loaded when a file has them), with a per-head
/// RMSNorm of queries and keys before RoPE, and a head size of its own (`head_dim`, 128 by
/// default: Qwen3-0.6B's 16 heads × 128 are wider than its hidden size of 1024).
package enum Qwen3Family: ModelFamily {
    package static let architectures = ["Qwen3ForCausalLM"]
    package static let ggufArchitecture: String? = "qwen3"
    /// Files without a template get Qwen's own turn format, ChatML.
    package static let fallbackChatTemplate: ChatTemplate? = ChatTemplate(format: .chatml)

    package static func options(from config: HFConfig) throws -> DecoderOptions {
        try Qwen2Family.qwenOptions(from: config, defaultHeadDim: 128).with { $0.qkNorm = true }
    }

    package static func options(gguf: GGUFFile) throws -> DecoderOptions {
        try Qwen2Family.options(gguf: gguf).with { $0.qkNorm = true }
    }
}
