import HearthKernels
import Testing

/// The run-time choice of kernel level: `HEARTH_CPU` forces a level the CPU runs, and never one
/// it cannot (a warning, then the best level).
@Suite struct KernelLevelTests {
    let vnniCPU: [KernelLevel] = [.portable, .avx2, .avx512, .avx512vnni]
    let avx2CPU: [KernelLevel] = [.portable, .avx2]

    @Test func bestLevelWithoutOverride() {
        for value in [nil, "", "native", " NATIVE "] {
            #expect(KernelLevel.resolve(value, supported: vnniCPU) == (.avx512vnni, nil))
            #expect(KernelLevel.resolve(value, supported: avx2CPU) == (.avx2, nil))
        }
    }

    @Test func forcesALowerLevelByNameOrAlias() {
        #expect(KernelLevel.resolve("portable", supported: vnniCPU).0 == .portable)
        #expect(KernelLevel.resolve("none", supported: vnniCPU).0 == .portable)
        #expect(KernelLevel.resolve("avx2", supported: vnniCPU).0 == .avx2)
        #expect(KernelLevel.resolve("haswell", supported: vnniCPU).0 == .avx2)
        #expect(KernelLevel.resolve("skylake-avx512", supported: vnniCPU).0 == .avx512)
        #expect(KernelLevel.resolve("avx512-vnni", supported: vnniCPU).0 == .avx512vnni)
        #expect(KernelLevel.resolve("znver4", supported: vnniCPU).1 == nil)
        let amxCPU = vnniCPU + [.amx]
        #expect(KernelLevel.resolve("amx", supported: amxCPU) == (.amx, nil))
        #expect(KernelLevel.resolve("sapphirerapids", supported: amxCPU) == (.amx, nil))
        #expect(KernelLevel.resolve(nil, supported: amxCPU) == (.amx, nil))
        #expect(KernelLevel.resolve("avx512-vnni", supported: amxCPU) == (.avx512vnni, nil))
        // A CPU (or an OS) without AMX: the VNNI level, with a warning.
        let (level, warning) = KernelLevel.resolve("amx", supported: vnniCPU)
        #expect(level == .avx512vnni)
        #expect(warning?.contains("cannot run the amx kernels") == true)
    }

    @Test func refusesWhatTheCPUCannotRunOrAnUnknownName() {
        let (level, warning) = KernelLevel.resolve("avx512", supported: avx2CPU)
        #expect(level == .avx2)
        #expect(warning?.contains("cannot run the avx512 kernels") == true)
        let (other, unknown) = KernelLevel.resolve("sse9", supported: avx2CPU)
        #expect(other == .avx2)
        #expect(unknown?.contains("not a kernel level") == true)
    }

    @Test func thisCPUsLevels() {
        #expect(KernelLevel.supported.first == .portable)
        #expect(KernelLevel.supported.contains(KernelLevel.current))
        #expect(KernelLevel.supported == KernelLevel.supported.sorted())
    }
}
