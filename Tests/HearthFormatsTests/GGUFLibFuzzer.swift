// The libFuzzer entry point for the GGUF header parser. It is compiled only when
// `GGUF_LIBFUZZER` is defined, by the stand-alone `swiftc -sanitize=fuzzer,address` build
// in docs/GGUF.md, which compiles this file into the HearthFormats module itself; in the
// test target it is empty. Not part of CI (the seeded mutation loop in GGUFFuzzTests is).
#if GGUF_LIBFUZZER
import HearthKernels

/// Parses one input as a whole GGUF file; when it parses, dequantizes every tensor Hearth
/// supports (so out-of-bounds promises would be caught by AddressSanitizer). Any error
/// other than `FormatError` is a bug and aborts the run.
@_cdecl("LLVMFuzzerTestOneInput")
public func ggufFuzzOneInput(_ data: UnsafeRawPointer?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: size > 0 ? data : nil, count: size)
    do {
        let header = try GGUFHeader(bytes: bytes, path: "fuzz.gguf")
        guard let base = bytes.baseAddress else { return 0 }
        for t in header.tensors {
            guard let dtype = t.dtype, t.elementCount <= 1 << 22 else { continue }
            let out = UnsafeMutablePointer<Float>.allocate(capacity: t.elementCount)
            dequantize(base + t.fileOffset, dtype: dtype, count: t.elementCount, into: out)
            out.deallocate()
        }
    } catch is FormatError {
        return 0
    } catch {
        // A crash is how libFuzzer records a finding; the parser must only throw FormatError.
        fatalError("GGUF fuzz: non-FormatError \(error)")
    }
    return 0
}
#endif
