import Foundation
import HearthKernels
import Synchronization

/// A checkpoint converted by `mlx_lm.convert -q`: safetensors where each quantized module
/// `X` has `X.weight` (UInt32, MLX's packing), `X.scales` and `X.biases` (the model's float
/// type), and `config.json` carries the `quantization` settings (`MLXQuantizationConfig`).
///
/// Asked for `X.weight`, this store returns the matrix in Hearth's kernel layout: 4-bit
/// affine groups become q4_1 `interleaved16` tiles (w = scale·q + bias is q4_1's w = d·q + m)
/// and 8-bit ones q8_a tiles (the same rule with q ∈ 0…255) — a byte rearrangement, no
/// requantization. Scales and biases are stored as f16 in the tiles:
/// f16 checkpoints convert exactly; bf16 and f32 values are rounded to the nearest f16 (exact
/// for bf16 unless a value falls outside f16's normal range; the store counts those).
/// Tensors without `.scales` (norms, biases, modules mlx-lm left unquantized) pass through.
///
/// Every shape is checked against the packing rules before a byte is read.
package final class MLXCheckpoint: TensorStore {
    /// The underlying safetensors files.
    package let base: SafetensorsCheckpoint
    /// The `quantization` settings from config.json.
    package let quantization: MLXQuantizationConfig
    /// Threads used to rearrange each matrix.
    package let threads: Int
    /// What this store has converted; every matrix it returns points at it (`MLXTiles`).
    package let conversion = MLXConversion()

    /// Wraps an opened checkpoint with its quantization settings.
    package init(base: SafetensorsCheckpoint, quantization: MLXQuantizationConfig, threads: Int) {
        self.base = base
        self.quantization = quantization
        self.threads = max(1, threads)
    }

    /// The store for a checkpoint directory: an `MLXCheckpoint` when `configJSON` (its
    /// config.json) has MLX quantization settings, else `base` itself; its weights are
    /// repacked on `threads` threads (default: all cores).
    package static func store(
        for base: SafetensorsCheckpoint, configJSON: Data, path: String, threads: Int = WorkerPool.defaultThreadCount
    ) throws -> TensorStore {
        guard let quantization = try MLXQuantizationConfig.parse(configJSON: configJSON, path: path) else { return base }
        return MLXCheckpoint(base: base, quantization: quantization, threads: threads)
    }

    /// A one-line description of the conversion: parameters, scale types, f16 exactness.
    package var summary: String { conversion.summary }

    /// Every tensor name of the underlying files (packed weights, scales and biases included).
    package var tensorNames: [String] { base.tensorNames }

    // Long: a sequence of 16 checks of a quantized module's config and tensors against each other, each
    // with its own error, before the one unpacking; read in order, as the format is.
    /// The tensor `name`; for a quantized module's `X.weight`, the matrix in kernel tiles
    /// (shape `[rows, cols]` unpacked). Throws `FormatError` when the config and the tensors
    /// disagree or use an unsupported setting (bits other than 4 and 8, non-affine modes,
    /// group sizes that are not multiples of 32).
    package func tensor(named name: String) throws -> TensorData? {
        let suffix = ".weight"
        guard name.hasSuffix(suffix) else { return try base.tensor(named: name) }
        let module = String(name.dropLast(suffix.count))
        guard let scales = base.entry(named: module + ".scales") else {
            if let weight = base.entry(named: name), weight.tensor.dtype == .U32 {
                throw FormatError(
                    .missingTensor, "packed MLX weight has no '\(module).scales'", path: weight.file.file.path, key: name,
                    remedy: "The checkpoint is incomplete; convert or download it again")
            }
            return try base.tensor(named: name)
        }
        guard let weight = base.entry(named: name) else { return nil }
        let path = weight.file.file.path
        guard case .quantized(let p) = quantization.entry(forModule: module) else {
            throw FormatError(
                .invalidValue, "config.json marks '\(module)' as not quantized, but the checkpoint has '\(module).scales'",
                path: path, key: "\(quantization.key).\(module)", remedy: "The config does not describe these weights")
        }
        guard p.mode == "affine" else {
            throw FormatError(
                .unsupportedDType, "MLX quantization mode '\(p.mode)' is not supported", path: path, key: name,
                remedy: "Hearth runs MLX affine quantization (the mlx_lm.convert default)")
        }
        guard p.bits == 4 || p.bits == 8 else {
            throw FormatError(
                .unsupportedDType, "MLX \(p.bits)-bit weights are not supported", path: path, key: name,
                remedy: "Hearth runs MLX affine 4-bit and 8-bit checkpoints (mlx_lm.convert -q --q-bits 4 or 8)")
        }
        let dtype: DType = p.bits == 4 ? .q4_1 : .q8_a
        guard weight.tensor.dtype == .U32, weight.tensor.shape.count == 2 else {
            throw FormatError(
                .unsupportedDType,
                "packed weight must be a 2-D U32 tensor, got \(weight.tensor.dtype.rawValue) \(weight.tensor.shape)",
                path: path, key: name)
        }
        let rows = weight.tensor.shape[0]
        let (cols, overflow) = weight.tensor.shape[1].multipliedReportingOverflow(by: 32 / p.bits)
        guard !overflow, rows > 0, cols > 0 else {
            throw FormatError(.shapeMismatch, "packed weight shape \(weight.tensor.shape) is empty or too large", path: path, key: name)
        }
        guard p.groupSize > 0, p.groupSize % 32 == 0 else {
            throw FormatError(
                .unsupportedDType, "group size \(p.groupSize) is not a multiple of 32", path: path,
                key: "\(quantization.key).group_size", remedy: "Hearth runs MLX group sizes 32, 64 and 128")
        }
        guard cols % p.groupSize == 0 else {
            throw FormatError(
                .shapeMismatch, "group size \(p.groupSize) does not divide the \(cols) input columns", path: path, key: name,
                remedy: "The config's group_size does not describe these weights")
        }
        let groups = cols / p.groupSize
        guard let biases = base.entry(named: module + ".biases") else {
            throw FormatError(
                .missingTensor, "affine-quantized module has no '\(module).biases'", path: path, key: name,
                remedy: "The checkpoint is incomplete; convert or download it again")
        }
        for part in [scales, biases] {
            guard part.tensor.shape == [rows, groups] else {
                throw FormatError(
                    .shapeMismatch,
                    "has shape \(part.tensor.shape) but \(rows) rows of \(cols) columns in groups of \(p.groupSize) need [\(rows), \(groups)]",
                    path: part.file.file.path, key: part.tensor.name)
            }
            guard part.tensor.dtype.floatDType != nil else {
                throw FormatError(
                    .unsupportedDType, "scales and biases must be F16, BF16 or F32, got \(part.tensor.dtype.rawValue)",
                    path: part.file.file.path, key: part.tensor.name,
                    remedy: "Hearth runs MLX affine quantization (integer-coded scales belong to the mxfp/nvfp modes)")
            }
        }
        guard let bytes = dtype.matrixBytes(rows: rows, cols: cols, layout: .interleaved16) else {
            throw FormatError(.shapeMismatch, "matrix \(rows) × \(cols) is too large", path: path, key: name)
        }
        let packed = try weight.file.data(of: weight.tensor)
        var scaleBits = try halfBits(scales, maxQ: (1 << p.bits) - 1)
        var biasBits = try halfBits(biases, maxQ: 0)
        let buffer = OwnedBuffer(count: bytes)
        guard let packedBase = packed.baseAddress else { return nil }
        scaleBits.values.withUnsafeBufferPointer { s in
            biasBits.values.withUnsafeBufferPointer { b in
                guard let s = s.baseAddress, let b = b.baseAddress else { return }
                let repack = p.bits == 4 ? MLXRepack.repack4Bit : MLXRepack.repack8Bit
                repack(packedBase, s, b, rows, cols, p.groupSize, buffer.pointer, threads)
            }
        }
        conversion.log.withLock { l in
            l.matrices["\(p)", default: 0] += 1
            l.scaleTypes.insert(scales.tensor.dtype.rawValue)
            l.scaleCount += 2 * rows * groups
            l.roundedScales += scaleBits.rounded + biasBits.rounded
            // Per group: |Δw| ≤ |Δs|·q_max + |Δb|; bound it by the two maxima.
            l.maxWeightError = max(l.maxWeightError, scaleBits.maxError + biasBits.maxError)
        }
        scaleBits.values = []
        biasBits.values = []
        // The tiles are a copy: the packed words, scales and biases need not stay resident.
        for part in [weight, scales, biases] {
            part.file.file.dropPages(at: part.tensor.offset, count: part.tensor.byteCount)
        }
        return TensorData(
            name: name, dtype: dtype, shape: [rows, cols], layout: .interleaved16,
            bytes: UnsafeRawBufferPointer(start: buffer.pointer, count: bytes),
            owner: MLXTiles(buffer: buffer, conversion: conversion), path: path)
    }

    /// A float tensor as f16 bit patterns, with how many values were rounded and the largest
    /// rounding error times `maxQ` (or, for `maxQ` 0, the error itself).
    private func halfBits(
        _ entry: (file: SafetensorsFile, tensor: SafetensorsTensor), maxQ: Int
    ) throws -> (values: [UInt16], rounded: Int, maxError: Float) {
        let raw = try entry.file.data(of: entry.tensor)
        let count = entry.tensor.elementCount
        guard let base = raw.baseAddress, let dtype = entry.tensor.dtype.floatDType else { return ([], 0, 0) }
        var values = [UInt16](repeating: 0, count: count)
        var rounded = 0
        var maxError: Float = 0
        for i in 0..<count {
            let f: Float
            switch dtype {
            case .f16:
                values[i] = UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self))
                continue
            case .bf16: f = bfloat16ToFloat(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self)))
            default: f = Float(bitPattern: UInt32(littleEndian: base.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)))
            }
            let h = floatToHalf(f)
            values[i] = h
            let back = halfToFloat(h)
            if back != f && !(back.isNaN && f.isNaN) {
                rounded += 1
                maxError = max(maxError, abs(back - f) * Float(max(maxQ, 1)))
            }
        }
        return (values, rounded, maxError)
    }
}

/// What one MLX load converted (shared by the store and the matrices it made).
package final class MLXConversion: Sendable {
    /// The record itself.
    package struct Log: Sendable, Equatable {
        /// Matrices converted, by their parameters.
        package var matrices: [String: Int] = [:]
        /// Float types the scales and biases were stored in.
        package var scaleTypes: Set<String> = []
        /// Scales and biases converted.
        package var scaleCount = 0
        /// How many of them were not exactly representable in f16 (and were rounded).
        package var roundedScales = 0
        /// Upper bound of |Δw| caused by rounding scales and biases to f16 (|Δs|·q_max + |Δb|).
        package var maxWeightError: Float = 0
    }

    let log = Mutex(Log())

    /// An empty record.
    package init() {}

    /// A copy of the record so far.
    package var snapshot: Log { log.withLock { $0 } }

    /// One line for `hearth inspect`: matrices by parameters, scale types, f16 exactness.
    package var summary: String {
        let l = snapshot
        let kinds = l.matrices.sorted { $0.key < $1.key }.map { "\($0.value) × \($0.key)" }.joined(separator: ", ")
        let types = l.scaleTypes.sorted().joined(separator: "/")
        let exactness =
            l.roundedScales == 0
            ? "exact"
            : "\(l.roundedScales) of \(l.scaleCount) rounded, max |Δw| \(String(format: "%.3g", l.maxWeightError))"
        return "MLX \(kinds.isEmpty ? "(no quantized matrices)" : kinds); scales/biases \(types) → f16 \(exactness)"
    }
}

/// The owner of a matrix `MLXCheckpoint` rearranged: keeps the tiles alive and points at
/// the conversion record, so whoever holds the weights can describe how they were loaded.
package final class MLXTiles: Sendable {
    /// The tiles.
    package let buffer: OwnedBuffer
    /// The load that made them.
    package let conversion: MLXConversion

    /// Wraps tiles made by a conversion.
    package init(buffer: OwnedBuffer, conversion: MLXConversion) {
        self.buffer = buffer
        self.conversion = conversion
    }

    /// The conversion summary of the first of `matrices` that came from an MLX checkpoint,
    /// or nil when none did.
    package static func summary(of matrices: [WeightMatrix]) -> String? {
        matrices.lazy.compactMap { ($0.owner as? MLXTiles)?.conversion.summary }.first
    }
}
