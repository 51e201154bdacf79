import Foundation
import HearthFormats
import HearthTestSupport
import Testing

/// Split GGUF sets (`gguf-split`'s NAME-0000i-of-0000N.gguf) read as one tensor store.
@Suite struct GGUFSplitTests {
    /// Writes a set of parts into a fresh folder; `tensors[i]` go to part i.
    func writeSet(_ tensors: [[(String, [Float])]], totalOverride: Int? = nil, skip: Int? = nil) throws -> [String] {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-split-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let total = tensors.reduce(0) { $0 + $1.count }
        var paths: [String] = []
        for (index, partTensors) in tensors.enumerated() {
            var builder = GGUFBuilder()
            if index == 0 { builder.string("general.architecture", "llama") }
            builder.entry("split.no", type: 2, withUnsafeBytes(of: UInt16(index).littleEndian) { Array($0) })
            builder.entry("split.count", type: 2, withUnsafeBytes(of: UInt16(tensors.count).littleEndian) { Array($0) })
            if index == 0 { builder.entry("split.tensors.count", type: 5, withUnsafeBytes(of: Int32(totalOverride ?? total).littleEndian) { Array($0) }) }
            for (name, values) in partTensors { builder.f32Tensor(name, values: values) }
            let path = dir.appendingPathComponent("model-Q8_0-0000\(index + 1)-of-0000\(tensors.count).gguf").path
            if index != skip { try Data(builder.bytes()).write(to: URL(fileURLWithPath: path)) }
            paths.append(path)
        }
        return paths
    }

    @Test func partsReadAsOneStore() throws {
        let paths = try writeSet([[("a", [1, 2]), ("b", [3])], [("c", [4, 5, 6])], [("d", [7])]])
        #expect(GGUFSplit.partPaths(first: paths[0]) == paths)
        #expect(GGUFSplit.partPaths(first: paths[1]) == nil)
        let split = try GGUFSplit(path: paths[0])
        #expect(split.tensorNames == ["a", "b", "c", "d"])
        #expect(try split.first.metadata.string("general.architecture") == "llama")
        let c = try #require(try split.tensor(named: "c"))
        #expect(c.shape == [3] && Array(c.bytes.bindMemory(to: Float.self)) == [4, 5, 6])
        #expect(c.path == paths[1])
        #expect(try split.tensor(named: "missing") == nil)
    }

    @Test func incompleteOrInconsistentSetsAreRefused() throws {
        let missing = try writeSet([[("a", [1])], [("b", [2])]], skip: 1)
        let error = #expect(throws: FormatError.self) { try GGUFSplit(path: missing[0]) }
        #expect(error?.code == .fileNotFound && error?.path == missing[1])
        let short = try writeSet([[("a", [1])], [("b", [2])]], totalOverride: 3)
        #expect(throws: FormatError.self) { try GGUFSplit(path: short[0]) }
        let twice = try writeSet([[("a", [1])], [("a", [2])]])
        #expect(throws: FormatError.self) { try GGUFSplit(path: twice[0]) }
    }
}
