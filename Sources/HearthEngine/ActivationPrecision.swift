import HearthKernels

/// How many bits the activations keep when the integer kernels multiply them with quantized
/// weights (each block of 32 activations is scaled to its largest value and rounded).
///
/// 16 bits keep the rounding 256 times finer than 8 and stay within rounding of f32
/// activations. 8 bits double the multiply rate of AVX-512 VNNI (`vpdpbusd` against
/// `vpdpwssd`), which is what makes prompt processing fast there, and are what llama.cpp uses
/// everywhere; on other CPUs they are no faster. docs/ACCURACY.md has what each costs, measured
/// with the KL-divergence tool and against the exact math.
///
/// The default is ``outliers``: on the committed texts it meets the project's accuracy rule —
/// mean KL divergence against f32 activations at most half llama.cpp's, clear-margin argmax
/// agreement with the exact math at least llama.cpp's + 1 point, and perplexity within 0.5% of
/// the exact one (docs/ACCURACY.md, "The activation budget") — with a third of ``balanced``'s KL
/// divergence at ``mixed``'s prompt speed on Phi-3-mini-shaped files, while ``mixed`` misses the
/// third clause. ``wide`` is the exact path, one flag away.
public enum ActivationPrecision: String, Sendable, CaseIterable {
    /// 16 bits everywhere: within rounding of f32 activations (the exact path).
    case wide = "16"
    /// ``mixed`` with the query/key/value projections kept at 16 bits: the attention output and
    /// MLP products over prompt tokens at 8 bits where the CPU has AVX-512 VNNI; 16 bits for
    /// q/k/v, for the tokens being generated, for the output head and on every other CPU (the
    /// default until outlier channels, ``outliers``, were measured).
    case balanced
    /// 8 bits for the layers' products over prompt tokens where the CPU has AVX-512 VNNI; 16 bits for the tokens being generated (even when they share a batch
    /// with a prompt, or verify drafted tokens), for the output head (the logits) and on every
    /// other CPU.
    case mixed
    /// ``mixed`` with each token's ``outlierChannels`` largest activations of every 8-bit product
    /// left out of its 8-bit blocks (so a block's scale comes from the other values) and multiplied
    /// by the weights in f32: 8-bit prompt products at close to 16-bit accuracy where the CPU
    /// has AVX-512 VNNI (docs/ACCURACY.md, "Outlier channels"); 16 bits on every other CPU. The
    /// default.
    case outliers
    /// 8 bits everywhere, as llama.cpp.
    case narrow = "8"

    /// What the engine uses unless told otherwise: ``outliers`` (see the rule above).
    public static let `default`: ActivationPrecision = .outliers

    /// Which of a layer's products a bit width applies to.
    public enum Product: Sendable {
        /// The query, key and value projections.
        case attentionInput
        /// Every other layer product: the attention output projection and the MLP.
        case other
    }

    /// Bits of the layers' products over prompt tokens (and texts being embedded) at kernel
    /// level `level`: of the attention output projection and the MLP unless `product` says
    /// otherwise.
    public func promptBits(level: KernelLevel = .current, product: Product = .other) -> Int {
        switch self {
        case .wide: return 16
        case .narrow: return 8
        case .mixed, .outliers: return level >= .avx512vnni ? 8 : 16
        case .balanced: return level >= .avx512vnni && product == .other ? 8 : 16
        }
    }

    /// How many of each token's largest-magnitude activations an 8-bit product multiplies in f32
    /// instead of 8 bits (``outliers``: 8; otherwise 0).
    public var outlierChannels: Int { self == .outliers ? 8 : 0 }

    /// Bits of the layers' products over tokens being generated (decode steps and drafts).
    public var generationBits: Int { self == .narrow ? 8 : 16 }

    /// Bits of the output head's product (the logits).
    public var headBits: Int { self == .narrow ? 8 : 16 }

    /// What runs at kernel level `level`, in words: "mixed: 8-bit prompts, 16-bit generation
    /// and head" (or "mixed: 16-bit everywhere (no AVX-512 VNNI)"), "16: 16-bit everywhere",
    /// "8: 8-bit everywhere". For `inspect`, `bench` and the server's model metadata.
    public func summary(level: KernelLevel = .current) -> String {
        switch self {
        case .wide: return "16: 16-bit everywhere"
        case .narrow: return "8: 8-bit everywhere"
        case .mixed:
            return promptBits(level: level) == 8
                ? "mixed: 8-bit prompts, 16-bit generation and head"
                : "mixed: 16-bit everywhere (8-bit prompts need AVX-512 VNNI)"
        case .outliers:
            return promptBits(level: level) == 8
                ? "outliers: 8-bit prompts with each token's 8 largest activations per product in f32, 16-bit generation and head"
                : "outliers: 16-bit everywhere (8-bit prompts need AVX-512 VNNI)"
        case .balanced:
            return promptBits(level: level) == 8
                ? "balanced: 8-bit prompts but q/k/v, 16-bit q/k/v, generation and head"
                : "balanced: 16-bit everywhere (8-bit prompts need AVX-512 VNNI)"
        }
    }
}
