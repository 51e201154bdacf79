/// What a weight tensor does in the forward pass. Models ask for roles, never for names;
/// each file format has one name table.
public enum TensorRole: Hashable, Sendable, CustomStringConvertible {
    case tokenEmbedding
    case outputNorm
    case output
    case attnNorm(Int)
    /// Fused query/key/value projection.
    case attnQKV(Int)
    case attnQ(Int)
    case attnK(Int)
    case attnV(Int)
    case attnOutput(Int)
    case ffnNorm(Int)
    /// Fused gate and up projection (gate rows first).
    case ffnGateUp(Int)
    case ffnGate(Int)
    case ffnUp(Int)
    case ffnDown(Int)

    /// The tensor name in Hugging Face (transformers) checkpoints of Llama-like models.
    public var huggingFaceName: String {
        switch self {
        case .tokenEmbedding: return "model.embed_tokens.weight"
        case .outputNorm: return "model.norm.weight"
        case .output: return "lm_head.weight"
        case .attnNorm(let l): return "model.layers.\(l).input_layernorm.weight"
        case .attnQKV(let l): return "model.layers.\(l).self_attn.qkv_proj.weight"
        case .attnQ(let l): return "model.layers.\(l).self_attn.q_proj.weight"
        case .attnK(let l): return "model.layers.\(l).self_attn.k_proj.weight"
        case .attnV(let l): return "model.layers.\(l).self_attn.v_proj.weight"
        case .attnOutput(let l): return "model.layers.\(l).self_attn.o_proj.weight"
        case .ffnNorm(let l): return "model.layers.\(l).post_attention_layernorm.weight"
        case .ffnGateUp(let l): return "model.layers.\(l).mlp.gate_up_proj.weight"
        case .ffnGate(let l): return "model.layers.\(l).mlp.gate_proj.weight"
        case .ffnUp(let l): return "model.layers.\(l).mlp.up_proj.weight"
        case .ffnDown(let l): return "model.layers.\(l).mlp.down_proj.weight"
        }
    }

    public var description: String { huggingFaceName }
}
