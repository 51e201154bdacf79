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
/// The default is ``wide``. A path with 8-bit activations may become the default only where it
/// meets the project's accuracy rule on the committed text: mean KL divergence against f32
/// activations at most half llama.cpp's, clear-margin argmax agreement with the exact math at
/// least llama.cpp's + 1 point, and perplexity within 0.5% of the exact one. ``mixed`` meets the
/// first two and misses the third (docs/ACCURACY.md, "The activation budget").
public enum ActivationPrecision: String, Sendable, CaseIterable {
    /// 16 bits everywhere: within rounding of f32 activations (the exact path; the default).
    case wide = "16"
    /// 8 bits for the layers' products over prompt tokens where the CPU has AVX-512 VNNI; 16 bits for the tokens being generated (even when they share a batch
    /// with a prompt, or verify drafted tokens), for the output head (the logits) and on every
    /// other CPU.
    case mixed
    /// 8 bits everywhere, as llama.cpp.
    case narrow = "8"

    /// What the engine uses unless told otherwise: ``wide`` (see the rule above).
    public static let `default`: ActivationPrecision = .wide

    /// Bits of the layers' products over prompt tokens (and texts being embedded) at kernel
    /// level `level`.
    public func promptBits(level: KernelLevel = .current) -> Int {
        switch self {
        case .wide: return 16
        case .narrow: return 8
        case .mixed: return level >= .avx512vnni ? 8 : 16
        }
    }

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
        }
    }
}
