import Foundation

/// A model that llama.cpp's `gguf-split` cut into `NAME-00001-of-0000N.gguf` … parts: each
/// part is a whole GGUF file holding some of the tensors; the first also carries the model's
/// metadata and `split.count` / `split.tensors.count`, every part its `split.no` (from 0).
/// The parts are mapped in place and read as one tensor store — nothing is joined on disk,
/// so the files stay as the hub cache holds them.
package final class GGUFSplit: TensorStore {
    /// The parts, in order; the first carries the model's metadata.
    package let parts: [GGUFFile]
    /// The first part.
    package let first: GGUFFile
    /// Tensor name → index of the part holding it.
    private let home: [String: Int]

    /// `…-00001-of-00003.gguf` → the three part paths; nil when `path` is not the first part
    /// of a split set by its name.
    package static func partPaths(first path: String) -> [String]? {
        let url = URL(fileURLWithPath: path)
        let name = url.lastPathComponent
        guard name.lowercased().hasSuffix(".gguf") else { return nil }
        let words = name.dropLast(5).split(separator: "-", omittingEmptySubsequences: false)
        guard words.count >= 4, words[words.count - 2] == "of", words[words.count - 3] == "00001",
            words[words.count - 1].count == 5, let count = Int(words[words.count - 1]), count >= 1
        else { return nil }
        let prefix = words.dropLast(3).joined(separator: "-")
        func padded(_ n: Int) -> String { String(repeating: "0", count: max(0, 5 - String(n).count)) + String(n) }
        return (1...count).map {
            url.deletingLastPathComponent().appendingPathComponent("\(prefix)-\(padded($0))-of-\(padded(count))\(name.suffix(5))").path
        }
    }

    /// Opens every part of the set whose first part is `path`, checking that each exists, that
    /// their `split.no` / `split.count` agree with the names, that no tensor is in two parts, and
    /// that the parts hold `split.tensors.count` tensors in all. Throws `FormatError`.
    package init(path: String) throws {
        guard let paths = Self.partPaths(first: path) else {
            throw FormatError(.invalidValue, "not the first part of a split GGUF (NAME-00001-of-0000N.gguf)", path: path)
        }
        var parts: [GGUFFile] = []
        var home: [String: Int] = [:]
        for (index, partPath) in paths.enumerated() {
            guard FileManager.default.fileExists(atPath: partPath) else {
                throw FormatError(.fileNotFound, "part \(index + 1) of \(paths.count) of a split GGUF is missing", path: partPath,
                    remedy: "Fetch every part (hearth pull does), or merge them with llama.cpp's gguf-split --merge")
            }
            let part = try GGUFFile(path: partPath)
            if let count = try part.metadata.int("split.count"), count != paths.count {
                throw FormatError(.invalidValue, "split.count is \(count), the file names say \(paths.count)", path: partPath, key: "split.count")
            }
            if let number = try part.metadata.int("split.no"), number != index {
                throw FormatError(.invalidValue, "split.no is \(number), the file name says \(index)", path: partPath, key: "split.no")
            }
            for name in part.tensorNames {
                if home[name] != nil {
                    throw FormatError(.invalidHeader, "a tensor is in two parts of the split GGUF", path: partPath, key: name)
                }
                home[name] = index
            }
            parts.append(part)
        }
        guard let first = parts.first else { throw FormatError(.invalidValue, "a split GGUF without parts", path: path) }
        if let total = try first.metadata.int("split.tensors.count"), total != home.count {
            throw FormatError(.missingTensor, "the parts hold \(home.count) tensors, split.tensors.count says \(total)", path: path,
                key: "split.tensors.count", remedy: "A part is truncated or from another model: fetch the parts again")
        }
        self.parts = parts
        self.first = first
        self.home = home
    }

    /// Tensor names, part by part in file order.
    package var tensorNames: [String] { parts.flatMap(\.tensorNames) }

    /// The tensor named `name` from the part holding it, or nil.
    package func tensor(named name: String) throws -> TensorData? {
        guard let index = home[name] else { return nil }
        return try parts[index].tensor(named: name)
    }
}
