import CHearthCPU
#if canImport(Glibc)
import Glibc
#endif

/// Hands memory the C heap holds free back to the operating system (glibc's `malloc_trim`;
/// nothing elsewhere). Called once a model has loaded: the format parsers' and tokenizer
/// builder's temporaries are freed by then, and glibc would otherwise keep their pages
/// resident for the life of the process.
package func releaseFreeHeapMemory() {
    hearth_release_free_heap()
}

/// Allocates `byteCount` bytes (at least 1) for a buffer the kernels stream through every token
/// (weights rearranged at load, the KV cache), aligned to 64 — or, from 2 MiB on, aligned to
/// 2 MiB and on Linux advised for transparent huge pages before anything touches it. Huge pages
/// raise the read bandwidth of long streams and spare the page walks of strided ones: a decode
/// step reads each KV head's slice of every cached position, one 4 KiB page per position with
/// small pages (a Phi-3-shaped cache row is 6 KiB). Nothing is written here (pages arrive as
/// they are first written); free it with `deallocate()`.
package func allocateStreamedBuffer(byteCount: Int) -> UnsafeMutableRawPointer {
    let huge = 2 << 20
    let count = max(byteCount, 1)
    let pointer = UnsafeMutableRawPointer.allocate(byteCount: count, alignment: count >= huge ? huge : 64)
    #if canImport(Glibc)
    if count >= huge { _ = madvise(pointer, count, 14 /* MADV_HUGEPAGE */) }
    #endif
    return pointer
}
