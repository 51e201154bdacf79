@_exported import HearthKernelsCommon
import CHearthCPU
import Foundation

/// The instruction-set levels Hearth has kernels for, lowest first.
///
/// Each level above `portable` is a module compiled for its own target CPU
/// (`HearthKernelsAVX2`: haswell; `HearthKernelsAVX512`: skylake-avx512;
/// `HearthKernelsAVX512VNNI`: cascadelake; `amx` runs that module's AMX tile kernels, built with
/// the AMX target features and called only at that level). One binary holds them all, and the level used is
/// chosen once, at first use, from what the CPU reports (CPUID and the OS-enabled register
/// state): the best level this CPU runs, or a lower one forced with the environment variable
/// `HEARTH_CPU` (for tests and comparisons). See docs/KERNELS.md.
public enum KernelLevel: String, CaseIterable, Sendable, Comparable, Codable {
    /// Any CPU: Swift compiled for the baseline (SSE2 on x86-64, NEON on arm64).
    case portable
    /// x86-64 with AVX2, FMA and F16C (Intel Haswell, AMD Zen and later).
    case avx2
    /// x86-64 with AVX-512 F/CD/BW/DQ/VL (Intel Skylake-SP and later, AMD Zen 4 and later).
    case avx512
    /// The AVX-512 level with VNNI's `vpdpbusd` (Intel Cascade Lake and later, AMD Zen 4 and later).
    case avx512vnni = "avx512-vnni"
    /// The AVX-512 VNNI level with AMX-INT8 tiles (Intel Sapphire Rapids and later) for the
    /// 8-bit products of prompts (16 tokens and more); everything else as `avx512-vnni`.
    /// Needs the operating system's consent (Linux 5.16+ grants it on request).
    case amx

    public static func < (a: KernelLevel, b: KernelLevel) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }

    /// The levels this CPU can run, lowest first (always includes `portable`).
    public static let supported: [KernelLevel] = {
        let features = hearth_cpu_features()
        var levels: [KernelLevel] = [.portable]
        #if arch(x86_64)
        if features & HEARTH_CPU_AVX2_LEVEL != 0 { levels.append(.avx2) }
        if features & HEARTH_CPU_AVX512_LEVEL != 0 { levels.append(.avx512) }
        if features & HEARTH_CPU_AVX512_LEVEL != 0 && features & HEARTH_CPU_AVX512VNNI != 0 {
            levels.append(.avx512vnni)
            if features & HEARTH_CPU_AMX != 0 { levels.append(.amx) }
        }
        #endif
        return levels
    }()

    /// The best level this CPU runs.
    public static var best: KernelLevel { supported.last ?? .portable }

    /// The level the kernels use in this process: ``best``, or the level `HEARTH_CPU` names.
    /// A level the CPU cannot run, or an unknown name, is reported once on standard error and
    /// the best level is used instead (a forced level never runs an illegal instruction).
    public static let current: KernelLevel = {
        let (level, warning) = resolve(ProcessInfo.processInfo.environment["HEARTH_CPU"], supported: supported)
        if let warning { FileHandle.standardError.write(Data("hearth: \(warning)\n".utf8)) }
        return level
    }()

    /// The level for a `HEARTH_CPU` value on a CPU that runs `supported`, and a warning when
    /// the value cannot be honoured. Accepted: a level name (`portable`, `avx2`, `avx512`,
    /// `avx512-vnni`, `amx`), `native` or empty (the best level), and for compatibility with earlier
    /// builds the LLVM CPU names `haswell` (avx2), `skylake-avx512` (avx512),
    /// `cascadelake`/`icelake-server`/`znver4` (avx512-vnni), `sapphirerapids` (amx) and
    /// `none`/`baseline` (portable).
    package static func resolve(_ value: String?, supported: [KernelLevel]) -> (KernelLevel, String?) {
        let best = supported.last ?? .portable
        guard let raw = value?.trimmingCharacters(in: .whitespaces).lowercased(), !raw.isEmpty, raw != "native" else {
            return (best, nil)
        }
        let aliases: [String: KernelLevel] = [
            "none": .portable, "baseline": .portable, "haswell": .avx2, "skylake-avx512": .avx512,
            "avx512vnni": .avx512vnni, "cascadelake": .avx512vnni, "icelake-server": .avx512vnni, "znver4": .avx512vnni,
            "sapphirerapids": .amx,
        ]
        guard let wanted = KernelLevel(rawValue: raw) ?? aliases[raw] else {
            let names = allCases.map(\.rawValue).joined(separator: ", ")
            return (best, "HEARTH_CPU=\(raw) is not a kernel level (\(names) or native); using \(best.rawValue)")
        }
        guard supported.contains(wanted) else {
            return (best, "HEARTH_CPU=\(raw): this CPU cannot run the \(wanted.rawValue) kernels; using \(best.rawValue)")
        }
        return (wanted, nil)
    }

    /// The CPU's name as it reports it (x86 brand string), or "" when unknown.
    public static var cpuName: String {
        var buffer = [CChar](repeating: 0, count: 64)
        hearth_cpu_name(&buffer, UInt32(buffer.count))
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
