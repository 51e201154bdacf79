import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthFormats

/// The reader on the fixtures written by gguf-py (scripts/make_gguf_fixtures.py).
@Suite struct GGUFReaderTests {
    struct Reference: Decodable {
        struct Tensor: Decodable {
            let ggml_type: UInt32
            let dims: [Int]
            let shape: [Int]
            let offset: Int
            let values: [Double]
        }

        let alignment: Int
        let tensors: [String: Tensor]
    }

    static let tensorOrder = [
        "f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k",
        "norm.1d", "shape.3d",
    ]

    @Test func headerAndTensorInfos() throws {
        let file = try GGUFFile(path: GGUFFixtures.path("types.gguf"))
        #expect(file.version == 3)
        #expect(file.header.alignment == 32)
        #expect(file.header.dataOffset % 32 == 0)
        #expect(file.tensorNames == Self.tensorOrder)
        let reference = try JSONDecoder().decode(
            Reference.self, from: Data(contentsOf: GGUFFixtures.directory.appendingPathComponent("types.json")))
        for name in Self.tensorOrder {
            let info = try #require(file.info(named: name))
            let expected = try #require(reference.tensors[name])
            #expect(info.dims == expected.dims, "\(name)")
            #expect(info.shape == expected.shape, "\(name)")
            #expect(info.type.id == expected.ggml_type, "\(name)")
            #expect(info.fileOffset == expected.offset, "\(name)")
            #expect(info.elementCount == expected.values.count, "\(name)")
        }
        #expect(file.info(named: "missing") == nil)
        #expect(try file.tensor(named: "missing") == nil)
    }

    /// Every tensor comes out of the `TensorStore` with reversed dims and bytes that
    /// dequantize exactly to gguf-py's values.
    @Test func tensorsDequantizeToReference() throws {
        let file = try GGUFFile(path: GGUFFixtures.path("types.gguf"))
        let reference = try JSONDecoder().decode(
            Reference.self, from: Data(contentsOf: GGUFFixtures.directory.appendingPathComponent("types.json")))
        let store: any TensorStore = file
        for name in store.tensorNames {
            let tensor = try #require(try store.tensor(named: name))
            let expected = try #require(reference.tensors[name])
            #expect(tensor.shape == expected.shape)
            #expect(tensor.layout == .rows)
            #expect(tensor.dtype.ggmlTypeID == expected.ggml_type)
            #expect(tensor.bytes.count == tensor.dtype.byteCount(elements: tensor.elementCount))
            var out = [Float](repeating: .nan, count: tensor.elementCount)
            out.withUnsafeMutableBufferPointer {
                dequantize(tensor.bytes.baseAddress!, dtype: tensor.dtype, count: tensor.elementCount, into: $0.baseAddress!)
            }
            #expect(out.map(\.bitPattern) == expected.values.map { Float($0).bitPattern }, "\(name)")
        }
    }

    @Test func metadataOfEveryType() throws {
        let meta = try GGUFFile(path: GGUFFixtures.path("types.gguf")).metadata
        #expect(meta.count == 28)
        #expect(meta.keys.first == "general.architecture")
        #expect(meta["test.uint8"] == .uint8(200))
        #expect(meta["test.int8"] == .int8(-100))
        #expect(meta["test.uint16"] == .uint16(60000))
        #expect(meta["test.int16"] == .int16(-30000))
        #expect(meta["test.uint32"] == .uint32(4_000_000_000))
        #expect(meta["test.int32"] == .int32(-2_000_000_000))
        #expect(meta["test.float32"] == .float32(0.1))
        #expect(meta["test.bool"] == .bool(true))
        #expect(meta["test.string"] == .string("h\u{e9}llo, \u{4e16}\u{754c} \u{1f30d}"))
        #expect(meta["test.uint64"] == .uint64(1 << 63 + 5))
        #expect(meta["test.int64"] == .int64(-(1 << 62)))
        #expect(meta["test.float64"] == .float64(2.718281828459045))
        #expect(meta["test.array.uint8"] == .array(.uint8([1, 2, 255])))
        #expect(meta["test.array.int16"] == .array(.int16([-1, 300])))
        #expect(meta["test.array.uint64"] == .array(.uint64([0, .max])))
        #expect(meta["test.array.float64"] == .array(.float64([0.5, -1.25])))
        #expect(meta["test.array.bool"] == .array(.bool([true, false, true])))
        #expect(meta["test.array.string"] == .array(.string(["a", "", "\u{fc}\u{f1}\u{ee}"])))
        #expect(meta["test.array.nested"] == .array(.array([.int32([1, 2]), .int32([3])])))
        #expect(meta["test.array.nested_strings"] == .array(.array([.string(["x", "y"]), .string(["z"])])))
        #expect(meta["test.array.nested_twice"] == .array(.array([.array([.int32([7])]), .array([.int32([8, 9])])])))
    }

    @Test func typedAccessors() throws {
        let meta = try GGUFFile(path: GGUFFixtures.path("types.gguf")).metadata
        #expect(try meta.string("general.architecture") == "llama")
        #expect(try meta.string("general.name") == "hearth-gguf-fixture")
        #expect(try meta.int("test.uint32") == 4_000_000_000)
        #expect(try meta.int("test.int8") == -100)
        #expect(try meta.int("test.int64") == -(1 << 62))
        #expect(try meta.float("test.float32") == 0.1)
        #expect(try meta.float("test.float64") == Float(2.718281828459045))
        #expect(try meta.float("test.int16") == -30000)
        #expect(try meta.bool("test.bool") == true)
        #expect(try meta.array("test.array.bool")?.count == 3)
        #expect(try meta.ints("test.array.int16") == [-1, 300])
        #expect(try meta.strings("tokenizer.ggml.tokens") == ["<unk>", "<s>", "</s>", "\u{2581}hello", "<0x0A>"])
        #expect(try meta.floats("tokenizer.ggml.scores") == [0, 0, 0, -1.5, -2.25])
        #expect(try meta.int32s("tokenizer.ggml.token_type") == [2, 3, 3, 1, 6])
        #expect(try meta.int32s("test.array.uint8") == [1, 2, 255])
        #expect(try meta.strings("tokenizer.ggml.merges") == ["\u{2581} h", "e l"])
        #expect(try meta.string("absent") == nil)
        #expect(try meta.strings("absent") == nil)
        #expect(try meta.require("general.architecture", meta.string) == "llama")
    }

    /// A type mismatch throws `.invalidValue` naming the key and both types; a missing
    /// required key throws `.missingKey`.
    @Test func accessorMismatchesNameTheKey() throws {
        let meta = try GGUFFile(path: GGUFFixtures.path("types.gguf")).metadata
        func failure(_ body: () throws -> Any?) -> FormatError? {
            do {
                _ = try body()
                return nil
            } catch { return error as? FormatError }
        }
        let cases: [(String, () throws -> Any?, String)] = [
            ("test.uint8", { try meta.string("test.uint8") }, "is a uint8, expected a string"),
            ("test.string", { try meta.int("test.string") }, "is a string, expected an integer"),
            ("test.uint64", { try meta.int("test.uint64") }, "is a uint64, expected an integer that fits"),
            ("test.string", { try meta.float("test.string") }, "expected a number"),
            ("test.uint8", { try meta.bool("test.uint8") }, "expected a bool"),
            ("test.bool", { try meta.array("test.bool") }, "expected an array"),
            ("tokenizer.ggml.scores", { try meta.strings("tokenizer.ggml.scores") }, "is a float32 array, expected a string array"),
            ("tokenizer.ggml.tokens", { try meta.floats("tokenizer.ggml.tokens") }, "is a string array, expected a float array"),
            ("tokenizer.ggml.tokens", { try meta.int32s("tokenizer.ggml.tokens") }, "expected an integer array"),
            ("test.array.uint64", { try meta.int32s("test.array.uint64") }, "expected an integer array"),
            ("test.array.nested", { try meta.ints("test.array.nested") }, "is a nested array, expected an integer array"),
        ]
        for (key, body, text) in cases {
            let error = try #require(failure(body), "\(key)")
            #expect(error.code == .invalidValue, "\(key)")
            #expect(error.key == key)
            #expect(error.message.contains(text), "\(error.message)")
            #expect(error.description.contains("types.gguf"))
        }
        let missing = try #require(failure { try meta.require("llama.block_count", meta.int) })
        #expect(missing.code == .missingKey && missing.key == "llama.block_count")
    }

    @Test func customAlignment() throws {
        let file = try GGUFFile(path: GGUFFixtures.path("aligned64.gguf"))
        #expect(file.header.alignment == 64)
        #expect(try file.metadata.int("general.alignment") == 64)
        #expect(file.header.dataOffset % 64 == 0)
        for info in file.tensorInfos { #expect(info.offset % 64 == 0) }
        let b = try #require(try file.tensor(named: "b"))
        #expect(b.dtype == .q8_0 && b.shape == [1, 32])
    }

    /// v2 has v3's layout; a v2 header reads the same.
    @Test func version2Reads() throws {
        var bytes = try GGUFFixtures.bytes("types.gguf")
        bytes[4] = 2
        let header = try parseGGUF(bytes)
        #expect(header.version == 2)
        #expect(header.tensors.count == 15)
    }

    /// A known ggml type Hearth does not compute with opens (its size is checked) but the
    /// tensor throws `.unsupportedDType` when used.
    @Test func knownButUnsupportedTypeThrowsOnUse() throws {
        var b = GGUFBuilder()
        b.tensor("iq", dims: [256], type: 16, offset: 0)  // IQ2_XXS: 66 bytes per 256
        b.data = [UInt8](repeating: 0, count: 66)
        let file = try GGUFFile(path: try GGUFFixtures.temporaryFile(b.bytes()))
        #expect(file.info(named: "iq")?.type.name == "IQ2_XXS")
        #expect(file.info(named: "iq")?.byteCount == 66)
        do {
            _ = try file.tensor(named: "iq")
            Issue.record("expected unsupportedDType")
        } catch let error as FormatError {
            #expect(error.code == .unsupportedDType && error.key == "iq" && error.message.contains("IQ2_XXS"))
        }
    }

    @Test func emptyArraysAndNoTensors() throws {
        var b = GGUFBuilder()
        b.entry("empty.strings", type: 9, GGUFBuilder.array(type: 8, count: 0))
        b.entry("empty.nested", type: 9, GGUFBuilder.array(type: 9, count: 1, GGUFBuilder.array(type: 6, count: 0)))
        b.string("general.architecture", "llama")
        let header = try parseGGUF(b.bytes())
        #expect(header.metadata["empty.strings"] == .array(.string([])))
        #expect(header.metadata["empty.nested"] == .array(.array([.float32([])])))
        #expect(header.tensors.isEmpty)
        #expect(try header.metadata.strings("empty.strings") == [])
    }

    @Test func detectsGGUFFiles() throws {
        #expect(GGUFFile.isGGUF(path: GGUFFixtures.path("types.gguf")))
        #expect(!GGUFFile.isGGUF(path: GGUFFixtures.directory.appendingPathComponent("types.json").path))
        #expect(!GGUFFile.isGGUF(path: "/nonexistent/model.gguf"))
        do {
            _ = try GGUFFile(path: "/nonexistent/model.gguf")
            Issue.record("expected fileNotFound")
        } catch let error as FormatError {
            #expect(error.code == .fileNotFound)
        }
    }
}
