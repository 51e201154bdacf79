import Foundation
import HearthTestSupport
import Testing

@testable import HearthFormats

/// Broken and hostile GGUF files are refused quickly, without a giant allocation, with a
/// `FormatError` whose code and message name the problem.
@Suite struct GGUFHostileTests {
    /// Parses `bytes`, expects a `FormatError` with `code` whose message contains `text`
    /// (and names `key` when given), and checks that the attempt grew the peak RSS by less
    /// than 64 MiB.
    func expectRefused(
        _ bytes: [UInt8], _ code: FormatError.Code, _ text: String, key: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let before = peakResidentBytes()
        guard let error = ggufError(bytes) else {
            Issue.record("parsed, expected \(code) containing '\(text)'", sourceLocation: sourceLocation)
            return
        }
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        #expect(error.message.contains(text), "\(error)", sourceLocation: sourceLocation)
        if let key { #expect(error.key == key, "\(error)", sourceLocation: sourceLocation) }
        #expect(error.path == "test.gguf", sourceLocation: sourceLocation)
        #expect(peakResidentBytes() - before < 64 << 20, "peak RSS grew", sourceLocation: sourceLocation)
    }

    /// A small valid file: one entry, one F32 tensor.
    func valid() -> GGUFBuilder {
        var b = GGUFBuilder()
        b.string("general.architecture", "llama")
        b.f32Tensor("t", values: [1, 2, 3, 4])
        return b
    }

    @Test func builderBaselineParses() throws {
        let header = try parseGGUF(valid().bytes())
        #expect(header.tensors.map(\.name) == ["t"])
    }

    @Test func wrongMagic() {
        var b = valid()
        b.magic = Array("GGUL".utf8)
        expectRefused(b.bytes(), .invalidHeader, "not a GGUF file")
        expectRefused(Array("PK\u{3}\u{4}".utf8) + [UInt8](repeating: 0, count: 40), .invalidHeader, "not a GGUF file")
    }

    @Test func unsupportedVersions() {
        var b = valid()
        b.version = 1
        expectRefused(b.bytes(), .invalidHeader, "version 1 is not supported")
        b.version = 4
        expectRefused(b.bytes(), .invalidHeader, "version 4 is not supported")
        b.version = 0
        expectRefused(b.bytes(), .invalidHeader, "version 0 is not supported")
        b.version = UInt32(3).byteSwapped
        expectRefused(b.bytes(), .invalidHeader, "big-endian")
    }

    @Test func tooShortForTheHeader() {
        expectRefused([], .truncated, "too short")
        expectRefused(Array("GG".utf8), .truncated, "too short")
        expectRefused(Array(valid().bytes().prefix(23)), .truncated, "too short")
    }

    /// Cutting the real fixture at every byte of its header, and at points in its data,
    /// always fails with an error for the region cut.
    @Test func truncationAtEveryRegion() throws {
        let bytes = try GGUFFixtures.bytes("types.gguf")
        let layout = GGUFLayout(bytes)
        let header = try parseGGUF(bytes)
        var codes: [String: Set<FormatError.Code>] = [:]
        for length in 0..<layout.infosEnd {
            let region = length < 24 ? "header" : length < layout.entriesEnd ? "metadata" : "tensor infos"
            let error = try #require(ggufError(Array(bytes.prefix(length))), "cut at \(length) parsed")
            codes[region, default: []].insert(error.code)
            // The file is too short either for a field being read or for a declared count.
            #expect([.truncated, .invalidHeader, .invalidValue].contains(error.code), "cut at \(length): \(error)")
            #expect(error.remedy?.contains("truncated") == true, "cut at \(length): \(error)")
        }
        #expect(codes["header"] == [.truncated])
        #expect(codes["metadata"]?.contains(.truncated) == true)
        #expect(codes["tensor infos"]?.contains(.truncated) == true)
        // Cuts in the padding and the data section leave the last tensor(s) past the end.
        let last = try #require(header.tensors.max { $0.fileOffset < $1.fileOffset })
        for length in [layout.infosEnd, header.dataOffset, header.dataOffset + 100, last.fileOffset, bytes.count - 1] {
            let error = try #require(ggufError(Array(bytes.prefix(length))), "cut at \(length) parsed")
            #expect(error.code == .offsetOutOfBounds, "cut at \(length): \(error)")
            #expect(error.message.contains("runs past the end of the data section"))
        }
    }

    @Test func tensorDataPastTheEnd() {
        var b = valid()
        b.tensor("far", dims: [8], type: 0, offset: 1 << 20)
        expectRefused(b.bytes(), .offsetOutOfBounds, "runs past the end of the data section", key: "far")
        var c = valid()
        c.tensor("huge", dims: [1 << 40], type: 0, offset: 32)
        expectRefused(c.bytes(), .offsetOutOfBounds, "runs past the end", key: "huge")
        var d = valid()
        d.tensor("wrap", dims: [8], type: 0, offset: UInt64.max - 31)
        expectRefused(d.bytes(), .offsetOutOfBounds, "runs past the end", key: "wrap")
    }

    @Test func unalignedOffset() {
        var b = valid()
        b.data += [UInt8](repeating: 0, count: 64)
        b.tensor("odd", dims: [4], type: 0, offset: 36)
        expectRefused(b.bytes(), .invalidValue, "not a multiple of the alignment (32 bytes)", key: "odd")
    }

    @Test func overlappingTensors() {
        var b = valid()
        b.tensor("alias", dims: [2], type: 0, offset: 0)
        expectRefused(b.bytes(), .overlappingTensors, "overlaps 't'")
    }

    @Test func absurdCounts() {
        var b = valid()
        b.declaredEntryCount = 1 << 62
        expectRefused(b.bytes(), .invalidHeader, "declares 4611686018427387904 metadata entries")
        b = valid()
        b.declaredTensorCount = 1 << 62
        expectRefused(b.bytes(), .invalidHeader, "declares 4611686018427387904 tensors")
        b = valid()
        b.declaredEntryCount = .max
        expectRefused(b.bytes(), .invalidHeader, "metadata entries")
    }

    @Test func absurdArrays() {
        for (type, name) in [(0 as UInt32, "uint8"), (8, "string"), (9, "array"), (12, "float64")] {
            var b = valid()
            b.entry("big", type: 9, GGUFBuilder.array(type: type, count: 1 << 40))
            expectRefused(b.bytes(), .invalidValue, "array of 1099511627776 \(name) elements cannot fit", key: "big")
        }
        var b = valid()
        b.entry("big", type: 9, GGUFBuilder.array(type: 8, count: .max))
        expectRefused(b.bytes(), .invalidValue, "cannot fit", key: "big")
        // Deep nesting is refused before it can exhaust the stack.
        var nested: [UInt8] = GGUFBuilder.array(type: 0, count: 0)
        for _ in 0..<100 { nested = GGUFBuilder.array(type: 9, count: 1, nested) }
        b = valid()
        b.entry("deep", type: 9, nested)
        expectRefused(b.bytes(), .invalidValue, "nested more than", key: "deep")
    }

    @Test func absurdDims() {
        var b = valid()
        b.tensor("overflow", dims: [1 << 32, 1 << 32], type: 0, offset: 32)
        expectRefused(b.bytes(), .invalidValue, "multiply past Int64", key: "overflow")
        b = valid()
        b.tensor("bytes", dims: [1 << 62], type: 28, offset: 32)  // F64: 8 × 2^62 bytes
        expectRefused(b.bytes(), .invalidValue, "more bytes than Int64", key: "bytes")
        b = valid()
        b.tensor("zero", dims: [4, 0], type: 0, offset: 32)
        expectRefused(b.bytes(), .invalidValue, "dimension 1 is 0", key: "zero")
        b = valid()
        b.tensor("negative", dims: [UInt64(bitPattern: -4)], type: 0, offset: 32)
        expectRefused(b.bytes(), .invalidValue, "must be positive", key: "negative")
        b = valid()
        b.tensor("five", dims: [1, 1, 1, 1, 1], type: 0, offset: 32)
        expectRefused(b.bytes(), .invalidValue, "5 dimensions", key: "five")
        b = valid()
        b.tensor("none", dims: [], type: 0, offset: 32)
        expectRefused(b.bytes(), .invalidValue, "0 dimensions", key: "none")
        b = valid()
        b.tensor("many", dims: [4], type: 0, offset: 32, nDims: 1 << 31)
        expectRefused(b.bytes(), .invalidValue, "2147483648 dimensions", key: "many")
        b = valid()
        b.tensor("ragged", dims: [33], type: 2, offset: 32)
        expectRefused(b.bytes(), .shapeMismatch, "not a multiple of Q4_0's block size 32", key: "ragged")
    }

    @Test func unknownTypeIDs() {
        for id: UInt32 in [4, 31, 42, 1000, .max] {
            var b = valid()
            b.tensor("mystery", dims: [32], type: id, offset: 32)
            expectRefused(b.bytes(), .unsupportedDType, "unknown ggml type id \(id)", key: "mystery")
        }
        var b = valid()
        b.entry("weird", type: 13, [0, 0, 0, 0])
        expectRefused(b.bytes(), .invalidValue, "is 13, not a GGUF value type", key: "weird")
        b = valid()
        b.entry("weird", type: 9, GGUFBuilder.array(type: 99, count: 1))
        expectRefused(b.bytes(), .invalidValue, "is 99, not a GGUF value type", key: "weird")
    }

    @Test func stringLengthPastTheEnd() {
        var b = valid()
        b.entry("general.name", type: 8, GGUFBuilder.u64(1 << 40) + Array("short".utf8))
        expectRefused(b.bytes(), .truncated, "declares a length of 1099511627776 bytes", key: "general.name")
        // A key whose own length runs past the end.
        b = valid()
        b.entries.append(GGUFBuilder.u64(.max) + Array("k".utf8))
        expectRefused(b.bytes(), .truncated, "the key of metadata entry 1 declares a length of 18446744073709551615")
        // A tensor name, and a string inside an array.
        b = valid()
        b.tensorInfos.append(GGUFBuilder.u64(1 << 33) + [UInt8](repeating: 65, count: 40))
        expectRefused(b.bytes(), .truncated, "the name of tensor 1 declares a length")
        b = valid()
        b.entry("list", type: 9, GGUFBuilder.array(type: 8, count: 2, GGUFBuilder.string("a") + GGUFBuilder.u64(9999) + [66]))
        expectRefused(b.bytes(), .truncated, "element 1 of array 'list' declares a length of 9999", key: "list")
    }

    @Test func badAlignment() {
        for (value, text) in [(0 as UInt32, "alignment is 0"), (48, "alignment is 48"), (3, "power of two")] {
            var b = valid()
            b.uint32("general.alignment", value)
            expectRefused(b.bytes(), .invalidValue, text, key: "general.alignment")
        }
        var b = valid()
        b.string("general.alignment", "32")
        expectRefused(b.bytes(), .invalidValue, "(string)", key: "general.alignment")
        b = valid()
        b.entry("general.alignment", type: 11, GGUFBuilder.u64(UInt64(bitPattern: -32)))
        expectRefused(b.bytes(), .invalidValue, "power of two", key: "general.alignment")
    }

    @Test func duplicates() {
        var b = valid()
        b.string("general.architecture", "phi3")
        expectRefused(b.bytes(), .invalidHeader, "appears twice", key: "general.architecture")
        b = valid()
        b.data += [UInt8](repeating: 0, count: 32)
        b.tensor("t", dims: [4], type: 0, offset: 32)
        expectRefused(b.bytes(), .invalidHeader, "two tensors have this name", key: "t")
    }

    /// The error reaches `GGUFFile` callers with the file's path.
    @Test func errorsNameTheFile() throws {
        var b = valid()
        b.version = 7
        let path = try GGUFFixtures.temporaryFile(b.bytes())
        do {
            _ = try GGUFFile(path: path)
            Issue.record("expected an error")
        } catch let error as FormatError {
            #expect(error.path == path && error.description.hasPrefix(path))
        }
    }
}
