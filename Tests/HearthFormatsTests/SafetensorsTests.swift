import Foundation
import HearthTestSupport
import Testing

@testable import HearthFormats

/// Hostile and broken safetensors files are refused with an error naming the problem.
@Suite struct SafetensorsTests {
    /// Writes a safetensors file with a given header text, optional forced header length, and data bytes.
    private func write(header: String, data: [UInt8], declaredLength: UInt64? = nil, truncateTo: Int? = nil) throws -> String {
        let headerBytes = Array(header.utf8)
        var length = (declaredLength ?? UInt64(headerBytes.count)).littleEndian
        var bytes = withUnsafeBytes(of: &length) { Array($0) }
        bytes += headerBytes
        bytes += data
        if let truncateTo { bytes = Array(bytes.prefix(truncateTo)) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-\(UUID().uuidString).safetensors").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func code(_ body: () throws -> Void) -> FormatError.Code? {
        do {
            try body()
            return nil
        } catch let error as FormatError {
            return error.code
        } catch {
            return nil
        }
    }

    private let floats: [UInt8] = [Float](repeating: 1.5, count: 6).withUnsafeBytes { Array($0) }

    @Test func validFileLoads() throws {
        let path = try write(
            header: #"{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"F16","shape":[4],"data_offsets":[16,24]}}"#,
            data: floats)
        let file = try SafetensorsFile(path: path)
        #expect(file.tensors.count == 2)
        #expect(file.metadata["format"] == "pt")
        let a = try #require(file.tensors["a"])
        #expect(a.shape == [2, 2])
        let bytes = try file.data(of: a)
        #expect(bytes.loadUnaligned(as: Float.self) == 1.5)
    }

    @Test func tooShort() throws {
        #expect(code { _ = try SafetensorsFile(path: try write(header: "", data: [], truncateTo: 5)) } == .truncated)
    }

    @Test func headerLengthPastEndOfFile() throws {
        let path = try write(header: "{}", data: [], declaredLength: 4096)
        #expect(code { _ = try SafetensorsFile(path: path) } == .truncated)
    }

    @Test func absurdHeaderLength() throws {
        let path = try write(header: "{}", data: [], declaredLength: UInt64.max)
        #expect(code { _ = try SafetensorsFile(path: path) } == .invalidHeader)
    }

    @Test func headerNotJSON() throws {
        #expect(code { _ = try SafetensorsFile(path: try write(header: "{not json", data: [])) } == .invalidHeader)
        #expect(code { _ = try SafetensorsFile(path: try write(header: "[1,2]", data: [])) } == .invalidHeader)
    }

    @Test func offsetsPastTheData() throws {
        let path = try write(header: #"{"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}}"#, data: floats)
        #expect(code { _ = try SafetensorsFile(path: path) } == .offsetOutOfBounds)
    }

    @Test func truncatedData() throws {
        let header = #"{"a":{"dtype":"F32","shape":[6],"data_offsets":[0,24]}}"#
        let path = try write(header: header, data: floats, truncateTo: 8 + header.utf8.count + 10)
        #expect(code { _ = try SafetensorsFile(path: path) } == .offsetOutOfBounds)
    }

    @Test func reversedOrNegativeOffsets() throws {
        let reversed = try write(header: #"{"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}}"#, data: floats)
        #expect(code { _ = try SafetensorsFile(path: reversed) } == .offsetOutOfBounds)
        let negative = try write(header: #"{"a":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}}"#, data: floats)
        #expect(code { _ = try SafetensorsFile(path: negative) } == .offsetOutOfBounds)
    }

    @Test func sizeDisagreesWithShape() throws {
        let path = try write(header: #"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}}"#, data: floats)
        #expect(code { _ = try SafetensorsFile(path: path) } == .sizeMismatch)
    }

    @Test func shapeOverflow() throws {
        let path = try write(
            header: #"{"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,16]}}"#, data: floats)
        #expect(code { _ = try SafetensorsFile(path: path) } == .invalidHeader)
    }

    @Test func overlappingTensors() throws {
        let path = try write(
            header: #"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}"#,
            data: floats)
        #expect(code { _ = try SafetensorsFile(path: path) } == .overlappingTensors)
    }

    @Test func unknownDType() throws {
        let path = try write(header: #"{"a":{"dtype":"Q9","shape":[1],"data_offsets":[0,4]}}"#, data: floats)
        #expect(code { _ = try SafetensorsFile(path: path) } == .unsupportedDType)
    }

    @Test func malformedEntries() throws {
        for header in [
            #"{"a":5}"#, #"{"a":{"shape":[1],"data_offsets":[0,4]}}"#,
            #"{"a":{"dtype":"F32","shape":"x","data_offsets":[0,4]}}"#,
            #"{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}"#,
            #"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}"#,
        ] {
            #expect(code { _ = try SafetensorsFile(path: try write(header: header, data: floats)) } == .invalidHeader)
        }
    }

    @Test func fixtureCheckpointsOpen() throws {
        for name in Fixtures.phi3Checkpoints {
            let checkpoint = try SafetensorsCheckpoint(directory: Fixtures.checkpoint(name))
            #expect(try checkpoint.tensor(named: "model.embed_tokens.weight")?.shape == [1024, 64])
        }
    }

    /// Dropped pages read back unchanged (they come from the file again); bad ranges are ignored.
    @Test func droppedPagesStillRead() throws {
        let bytes = (0..<(3 * 4096 + 100)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-\(UUID().uuidString).bin").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try MappedFile(path: path)
        #expect(Array(try file.bytes(at: 0, count: bytes.count)) == bytes)
        file.dropPages(at: 10, count: bytes.count - 10)
        file.dropPages(at: -1, count: 5)
        file.dropPages(at: 0, count: bytes.count + 1)
        #expect(Array(try file.bytes(at: 0, count: bytes.count)) == bytes)
    }

    /// `rope_parameters` per layer type (Gemma 3) gives the full-attention entry as the model's
    /// RoPE; a family's own keys decode from the same bytes, with errors naming file and key.
    @Test func configKeepsItsBytesForTheFamilysKeys() throws {
        let url = Fixtures.checkpoint("gemma3-tiny").appendingPathComponent("config.json")
        let config = try HFConfig.load(from: url)
        #expect(config.architectures == ["Gemma3ForCausalLM"])
        #expect(config.eosTokenId == IntList([1023]))
        #expect(config.ropeScaling?.type == "default")
        #expect(config.ropeTheta == 1_000_000)
        struct Own: Decodable {
            let rms_norm_eps: Double
            let query_pre_attn_scalar: Int
        }
        let own = try config.decode(Own.self)
        #expect(own.rms_norm_eps == 1e-6 && own.query_pre_attn_scalar == 24)
        struct Wrong: Decodable { let sliding_window: String }
        do {
            _ = try config.decode(Wrong.self)
            Issue.record("a number decoded as a string")
        } catch let error as FormatError {
            #expect(error.code == .invalidValue && error.key == "sliding_window" && error.path == url.path)
        }
        // A GGUF file's stand-in has its architecture and nothing else.
        let bare = HFConfig(architectures: ["llama"])
        #expect(bare.hiddenSize == nil && bare.ropeScaling == nil)
    }

    @Test func configFormsDecode() throws {
        let classic = try HFConfig.load(from: Fixtures.checkpoint("phi3-mha").appendingPathComponent("config.json"))
        #expect(classic.ropeScaling == nil)
        #expect(classic.ropeTheta == 10000)
        let modern = try HFConfig.load(
            from: Fixtures.checkpoint("phi3-gqa-longrope").appendingPathComponent("config.json"))
        #expect(modern.ropeScaling?.type == "longrope")
        #expect(modern.ropeScaling?.shortFactor?.count == 8)
        #expect(modern.originalMaxPositionEmbeddings == 16)
        let generation = try GenerationConfig.load(
            from: Fixtures.checkpoint("phi3-mha").appendingPathComponent("generation_config.json"))
        #expect(generation.eosTokenId?.values == [1000, 1007])
    }
}
