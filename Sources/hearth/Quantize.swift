import ArgumentParser
import Foundation
import HearthEngine
import HearthFormats
import HearthKernels

struct Quantize: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Quantize a checkpoint into one memory-mappable .hqf file (config and tokenizer inside).")

    /// The checkpoint to quantize: F32, F16 or BF16 safetensors.
    @OptionGroup var source: ModelOption

    @Option(name: .long, help: "The .hqf file to write.")
    var output: String

    @Option(name: .long, help: "Block type for the projections: q4_0 (4.5 bits/weight), q4_1 (5.0) or q8_0 (8.5). The output matrix is kept at q8_0.")
    var type: DType = .q4_0

    @OptionGroup var workers: ThreadsOption

    func validate() throws {
        if !QuantizationPlan.types.contains(type) { throw ValidationError("--type takes q4_0, q4_1 or q8_0") }
    }

    func run() throws {
        try reportingErrors {
            let started = Date()
            let path = try source.path()
            let status = StatusLine(label: "loading \(URL(fileURLWithPath: path).lastPathComponent)")
            let lm: TransformerModel
            do { lm = try TransformerModel(path: path, threads: workers.threads, repackCache: source.repackCache) } catch {
                status.finish()
                throw error
            }
            status.finish()
            let plan = try QuantizationPlan(type: type)
            let o = lm.options
            var entries: [(name: String, dtype: DType, layout: WeightLayout, shape: [Int], length: Int)] = []
            var fills: [(UnsafeMutableRawBufferPointer, @escaping @Sendable (Double) -> Void) throws -> Void] = []
            let matrices = lm.weights.namedMatrices(options: o)
            let totalWeights = Double(matrices.reduce(0) { $0 + $1.matrix.rows * $1.matrix.cols })
            let threads = workers.threads ?? WorkerPool.defaultThreadCount
            for (role, w) in matrices {
                let dtype = ModelWeights.type(for: role, plan: plan, tied: o.tiedEmbeddings)
                let length = dtype.matrixBytes(rows: w.rows, cols: w.cols, layout: .interleaved16) ?? 0
                entries.append((role.huggingFaceName, dtype, .interleaved16, [w.rows, w.cols], length))
                fills.append { buffer, progress in
                    if w.layout == .interleaved16 {
                        guard w.dtype == dtype, w.byteCount == length, let base = buffer.baseAddress else {
                            throw EngineError(.invalidOption, "\(role) is already quantized as \(w.dtype.rawValue)")
                        }
                        base.copyMemory(from: w.data, byteCount: length)
                    } else if let base = buffer.baseAddress {
                        Quantizer.quantizeMatrix(w, to: dtype, into: base, threads: threads, progress: progress)
                    }
                }
            }
            for (role, vector) in lm.weights.namedVectors() {
                entries.append((role.huggingFaceName, .f32, .rows, [vector.count], vector.count * 4))
                fills.append { buffer, _ in vector.withUnsafeBytes { buffer.copyMemory(from: $0) } }
            }
            let bar = ProgressBar(label: "quantizing to \(type.rawValue)")
            var done = 0.0
            try HQFFile.write(
                to: output, quantization: plan.description, config: lm.configText,
                generationConfig: lm.generationConfigText, files: lm.tokenizerFiles.byName, tensors: entries
            ) { index, buffer in
                let share = index < matrices.count ? Double(matrices[index].matrix.rows * matrices[index].matrix.cols) : 0
                let start = done
                try fills[index](buffer) { bar.update((start + $0 * share) / totalWeights) }
                done += share
            }
            bar.finish()
            let size = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? Int) ?? 0
            let bits = Double(size * 8) / Double(lm.parameterCount)
            FileHandle.standardError.write(
                Data(
                    "wrote \(output): \(formatBytes(size)), \(String(format: "%.2f", bits)) bits/weight, \(String(format: "%.1f", Date().timeIntervalSince(started)))s\n"
                        .utf8))
        }
    }
}
