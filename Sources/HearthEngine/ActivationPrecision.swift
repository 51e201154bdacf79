/// How many bits the activations keep when the integer kernels multiply them with quantized
/// weights (each block of 32 activations is scaled to its largest value and rounded).
///
/// 16 bits keep the rounding 256 times finer than 8 and stay within rounding of f32
/// activations. 8 bits double the multiply rate of AVX-512 VNNI (`vpdpbusd` against
/// `vpdpwssd`), which is what makes prompt processing fast there, and are what llama.cpp uses
/// everywhere; on other CPUs they are no faster. docs/ACCURACY.md has what each costs, measured
/// with the KL-divergence tool and against the exact math.
public enum ActivationPrecision: String, Sendable, CaseIterable {
    /// 16 bits everywhere (the default).
    case wide = "16"
    /// 8 bits for the layers' products over a prompt (two or more tokens at once) where the CPU
    /// has AVX-512 VNNI; 16 bits for single tokens (generation), for the output head (the
    /// logits) and on every other CPU.
    case mixed
    /// 8 bits everywhere, as llama.cpp.
    case narrow = "8"
}
