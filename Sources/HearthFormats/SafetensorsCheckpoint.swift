import Foundation
import HearthKernels

/// The weights of a Hugging Face hub-layout checkpoint: one `model.safetensors`, or shards
/// listed by `model.safetensors.index.json`, or (as MLX conversions ship) any
/// `*.safetensors` files in the directory.
package final class SafetensorsCheckpoint: TensorStore {
    /// The checkpoint directory.
    package let directory: URL
    /// The opened files.
    package let files: [SafetensorsFile]
    private let index: [String: Int]

    /// Opens every safetensors file of the checkpoint in `directory` and validates them.
    package init(directory: URL) throws {
        self.directory = directory
        let fm = FileManager.default
        let indexURL = directory.appendingPathComponent("model.safetensors.index.json")
        var fileNames: [String] = []
        var expected: [String: String] = [:]
        if fm.fileExists(atPath: indexURL.path) {
            let data = try Data(contentsOf: indexURL)
            struct Index: Decodable {
                let weight_map: [String: String]
            }
            guard let weightMap = (try? JSONDecoder().decode(Index.self, from: data))?.weight_map else {
                throw FormatError(
                    .invalidJSON, "index has no 'weight_map' object", path: indexURL.path, key: "weight_map")
            }
            for (tensor, file) in weightMap {
                guard !file.contains("/"), !file.contains(".."), !file.isEmpty else {
                    throw FormatError(
                        .invalidValue, "shard name '\(file)' is not a plain file name", path: indexURL.path,
                        key: tensor)
                }
                expected[tensor] = file
            }
            fileNames = Array(Set(weightMap.values)).sorted()
        } else if fm.fileExists(atPath: directory.appendingPathComponent("model.safetensors").path) {
            fileNames = ["model.safetensors"]
        } else {
            let all = (try? fm.contentsOfDirectory(atPath: directory.path)) ?? []
            fileNames = all.filter { $0.hasSuffix(".safetensors") }.sorted()
        }
        guard !fileNames.isEmpty else {
            throw FormatError(
                .fileNotFound, "no .safetensors weights found", path: directory.path,
                remedy: "Point --model at a Hugging Face checkpoint directory (config.json + *.safetensors)")
        }
        var files: [SafetensorsFile] = []
        var index: [String: Int] = [:]
        for (i, name) in fileNames.enumerated() {
            let file = try SafetensorsFile(path: directory.appendingPathComponent(name).path)
            files.append(file)
            for tensorName in file.tensors.keys { index[tensorName] = i }
        }
        for (tensor, file) in expected where index[tensor] == nil {
            throw FormatError(
                .missingTensor, "the index lists this tensor in '\(file)' but no shard holds it", path: indexURL.path,
                key: tensor, remedy: "A shard is missing or corrupt; download the checkpoint again")
        }
        self.files = files
        self.index = index
    }

    package var tensorNames: [String] { Array(index.keys) }

    /// The header entry of a tensor and the file that holds it, whatever its dtype
    /// (quantized layouts such as MLX's read their U32/scale tensors through this).
    package func entry(named name: String) -> (file: SafetensorsFile, tensor: SafetensorsTensor)? {
        guard let fileIndex = index[name], let info = files[fileIndex].tensors[name] else { return nil }
        return (files[fileIndex], info)
    }

    package func tensor(named name: String) throws -> TensorData? {
        guard let fileIndex = index[name], let info = files[fileIndex].tensors[name] else { return nil }
        let file = files[fileIndex]
        guard let dtype = info.dtype.floatDType else {
            throw FormatError(
                .unsupportedDType, "dtype \(info.dtype.rawValue) cannot be used as a float tensor", path: file.file.path,
                key: name, remedy: "Use a checkpoint stored in F32, F16 or BF16")
        }
        return TensorData(
            name: name, dtype: dtype, shape: info.shape, bytes: try file.data(of: info), owner: file,
            path: file.file.path)
    }
}
