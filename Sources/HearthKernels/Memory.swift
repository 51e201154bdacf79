import CHearthCPU

/// Hands memory the C heap holds free back to the operating system (glibc's `malloc_trim`;
/// nothing elsewhere). Called once a model has loaded: the format parsers' and tokenizer
/// builder's temporaries are freed by then, and glibc would otherwise keep their pages
/// resident for the life of the process.
public func releaseFreeHeapMemory() {
    hearth_release_free_heap()
}
