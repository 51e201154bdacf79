/// What a weight tensor does in the forward pass. Models ask for roles, never for names;
/// each file format (and each family, where Hugging Face names differ) has a name table.
package enum TensorRole: Hashable, Sendable, CustomStringConvertible {
    case tokenEmbedding
    case outputNorm, outputNormBias
    case output, outputBias
    case attnNorm(Int), attnNormBias(Int)
    /// Fused query/key/value projection (q rows, then k, then v).
    case attnQKV(Int), attnQKVBias(Int)
    case attnQ(Int), attnK(Int), attnV(Int)
    case attnQBias(Int), attnKBias(Int), attnVBias(Int)
    /// Per-head query/key norms (head-dim vectors).
    case attnQNorm(Int), attnKNorm(Int)
    case attnOutput(Int), attnOutputBias(Int)
    /// Norm of the attention output before the residual add (sandwich norms).
    case postAttnNorm(Int)
    /// The norm before the MLP.
    case ffnNorm(Int), ffnNormBias(Int)
    /// Fused gate and up projection (gate rows first).
    case ffnGateUp(Int)
    case ffnGate(Int)
    /// The up projection (for a plain MLP, its input projection, e.g. Phi-2's fc1).
    case ffnUp(Int), ffnUpBias(Int)
    case ffnDown(Int), ffnDownBias(Int)
    /// Norm of the MLP output before the residual add (sandwich norms).
    case postFFNNorm(Int)
    /// Gemma 4's per-layer embeddings: one row of (layers × width) per token.
    case perLayerTokenEmbedding
    /// Gemma 4: hidden → layers × per-layer width, the context part of the per-layer inputs.
    case perLayerModelProjection
    /// Gemma 4: the norm (per-layer width) of that projection.
    case perLayerProjectionNorm
    /// Gemma 4: hidden → per-layer width, gating the layer's per-layer input.
    case perLayerInputGate(Int)
    /// Gemma 4: per-layer width → hidden, back into the residual.
    case perLayerProjection(Int)
    /// Gemma 4: norm of that projection's output.
    case postPerLayerInputNorm(Int)
    /// Gemma 4: the scalar a layer's output is multiplied by.
    case layerScalar(Int)

    /// The Hugging Face (transformers) name in Llama-like checkpoints; families whose
    /// names differ override entries in their own table.
    package var huggingFaceName: String {
        switch self {
        case .tokenEmbedding: return "model.embed_tokens.weight"
        case .outputNorm: return "model.norm.weight"
        case .outputNormBias: return "model.norm.bias"
        case .output: return "lm_head.weight"
        case .outputBias: return "lm_head.bias"
        case .attnNorm(let l): return "model.layers.\(l).input_layernorm.weight"
        case .attnNormBias(let l): return "model.layers.\(l).input_layernorm.bias"
        case .attnQKV(let l): return "model.layers.\(l).self_attn.qkv_proj.weight"
        case .attnQKVBias(let l): return "model.layers.\(l).self_attn.qkv_proj.bias"
        case .attnQ(let l): return "model.layers.\(l).self_attn.q_proj.weight"
        case .attnK(let l): return "model.layers.\(l).self_attn.k_proj.weight"
        case .attnV(let l): return "model.layers.\(l).self_attn.v_proj.weight"
        case .attnQBias(let l): return "model.layers.\(l).self_attn.q_proj.bias"
        case .attnKBias(let l): return "model.layers.\(l).self_attn.k_proj.bias"
        case .attnVBias(let l): return "model.layers.\(l).self_attn.v_proj.bias"
        case .attnQNorm(let l): return "model.layers.\(l).self_attn.q_norm.weight"
        case .attnKNorm(let l): return "model.layers.\(l).self_attn.k_norm.weight"
        case .attnOutput(let l): return "model.layers.\(l).self_attn.o_proj.weight"
        case .attnOutputBias(let l): return "model.layers.\(l).self_attn.o_proj.bias"
        case .postAttnNorm(let l): return "model.layers.\(l).post_attention_norm.weight"
        case .ffnNorm(let l): return "model.layers.\(l).post_attention_layernorm.weight"
        case .ffnNormBias(let l): return "model.layers.\(l).post_attention_layernorm.bias"
        case .ffnGateUp(let l): return "model.layers.\(l).mlp.gate_up_proj.weight"
        case .ffnGate(let l): return "model.layers.\(l).mlp.gate_proj.weight"
        case .ffnUp(let l): return "model.layers.\(l).mlp.up_proj.weight"
        case .ffnUpBias(let l): return "model.layers.\(l).mlp.up_proj.bias"
        case .ffnDown(let l): return "model.layers.\(l).mlp.down_proj.weight"
        case .ffnDownBias(let l): return "model.layers.\(l).mlp.down_proj.bias"
        case .postFFNNorm(let l): return "model.layers.\(l).post_feedforward_layernorm.weight"
        case .perLayerTokenEmbedding: return "model.embed_tokens_per_layer.weight"
        case .perLayerModelProjection: return "model.per_layer_model_projection.weight"
        case .perLayerProjectionNorm: return "model.per_layer_projection_norm.weight"
        case .perLayerInputGate(let l): return "model.layers.\(l).per_layer_input_gate.weight"
        case .perLayerProjection(let l): return "model.layers.\(l).per_layer_projection.weight"
        case .postPerLayerInputNorm(let l): return "model.layers.\(l).post_per_layer_input_norm.weight"
        case .layerScalar(let l): return "model.layers.\(l).layer_scalar"
        }
    }

    /// Whether this role is a vector (norm weight or bias) rather than a matrix.
    package var isVector: Bool {
        switch self {
        case .tokenEmbedding, .output, .attnQKV, .attnQ, .attnK, .attnV, .attnOutput, .ffnGateUp, .ffnGate, .ffnUp,
            .ffnDown, .perLayerTokenEmbedding, .perLayerModelProjection, .perLayerInputGate, .perLayerProjection:
            return false
        default:
            return true
        }
    }

    /// Whether this role is a norm weight (families may offset these at load).
    package var isNormWeight: Bool {
        switch self {
        case .outputNorm, .attnNorm, .attnQNorm, .attnKNorm, .postAttnNorm, .ffnNorm, .postFFNNorm, .perLayerProjectionNorm,
            .postPerLayerInputNorm:
            return true
        default: return false
        }
    }

    package var description: String { huggingFaceName }
}

extension TensorRole {
    /// The tensor name in GGUF files (llama.cpp's names).
    package var ggufName: String? {
        switch self {
        case .tokenEmbedding: return "token_embd.weight"
        case .outputNorm: return "output_norm.weight"
        case .outputNormBias: return "output_norm.bias"
        case .output: return "output.weight"
        case .outputBias: return "output.bias"
        case .attnNorm(let l): return "blk.\(l).attn_norm.weight"
        case .attnNormBias(let l): return "blk.\(l).attn_norm.bias"
        case .attnQKV(let l): return "blk.\(l).attn_qkv.weight"
        case .attnQKVBias(let l): return "blk.\(l).attn_qkv.bias"
        case .attnQ(let l): return "blk.\(l).attn_q.weight"
        case .attnK(let l): return "blk.\(l).attn_k.weight"
        case .attnV(let l): return "blk.\(l).attn_v.weight"
        case .attnQBias(let l): return "blk.\(l).attn_q.bias"
        case .attnKBias(let l): return "blk.\(l).attn_k.bias"
        case .attnVBias(let l): return "blk.\(l).attn_v.bias"
        case .attnQNorm(let l): return "blk.\(l).attn_q_norm.weight"
        case .attnKNorm(let l): return "blk.\(l).attn_k_norm.weight"
        case .attnOutput(let l): return "blk.\(l).attn_output.weight"
        case .attnOutputBias(let l): return "blk.\(l).attn_output.bias"
        case .postAttnNorm(let l): return "blk.\(l).post_attention_norm.weight"
        case .ffnNorm(let l): return "blk.\(l).ffn_norm.weight"
        case .ffnNormBias(let l): return "blk.\(l).ffn_norm.bias"
        case .ffnGateUp: return nil
        case .ffnGate(let l): return "blk.\(l).ffn_gate.weight"
        case .ffnUp(let l): return "blk.\(l).ffn_up.weight"
        case .ffnUpBias(let l): return "blk.\(l).ffn_up.bias"
        case .ffnDown(let l): return "blk.\(l).ffn_down.weight"
        case .ffnDownBias(let l): return "blk.\(l).ffn_down.bias"
        case .postFFNNorm(let l): return "blk.\(l).post_ffw_norm.weight"
        case .perLayerTokenEmbedding: return "per_layer_token_embd.weight"
        case .perLayerModelProjection: return "per_layer_model_proj.weight"
        case .perLayerProjectionNorm: return "per_layer_proj_norm.weight"
        case .perLayerInputGate(let l): return "blk.\(l).inp_gate.weight"
        case .perLayerProjection(let l): return "blk.\(l).proj.weight"
        case .postPerLayerInputNorm(let l): return "blk.\(l).post_norm.weight"
        case .layerScalar(let l): return "blk.\(l).layer_output_scale.weight"
        }
    }
}
