import ArgumentParser
import Foundation
import HearthEngine

/// `--cache-ram`, `--cache-dir` and `--cache-disk`: the prompt cache (docs/PROMPT-CACHE.md),
/// for the commands that keep a model between requests (`serve`, `chat`).
struct PromptCacheOption: ParsableArguments {
    @Option(name: .customLong("cache-ram"), help: ArgumentHelp("MiB of host memory for the prompt cache: finished requests' keys and values, kept in 64-token blocks beyond the sequence slots, so any prompt that shares a prefix with an earlier one (a system prompt, an earlier turn, a conversation that lost its slot) computes only the rest; least recently used blocks go first. 0 turns it off. Default: a quarter of physical memory, at most 8192.", valueName: "MiB"))
    var cacheRAM: Int?

    @Option(name: .customLong("cache-dir"), help: ArgumentHelp("Also keep the prompt cache's blocks in this directory (one subdirectory per model file and KV layout; each file checksummed and checked before use), so they survive a restart.", valueName: "dir"))
    var cacheDir: String?

    @Option(name: .customLong("cache-disk"), help: ArgumentHelp("MiB the --cache-dir tier may hold per model; the least recently used blocks are removed beyond it.", valueName: "MiB"))
    var cacheDisk: Int = PromptCacheOptions.defaultDiskBytes >> 20

    func validate() throws {
        if let cacheRAM, !(0...(1 << 30)).contains(cacheRAM) { throw ValidationError("--cache-ram must be between 0 and 1073741824 MiB") }
        if !(1...(1 << 30)).contains(cacheDisk) { throw ValidationError("--cache-disk must be between 1 and 1073741824 MiB") }
        if cacheDir != nil && cacheRAM == 0 {
            throw ValidationError("--cache-dir needs the memory tier (blocks reach the disk through it): do not give --cache-ram 0 with it")
        }
        if let cacheDir, cacheDir.isEmpty { throw ValidationError("--cache-dir is empty") }
    }

    /// The prompt cache these flags ask for.
    var options: PromptCacheOptions {
        var options = PromptCacheOptions(bytes: cacheRAM.map { $0 << 20 } ?? PromptCacheOptions.defaultBytes)
        options.directory = cacheDir.map { URL(fileURLWithPath: $0) }
        options.diskBytes = cacheDisk << 20
        return options
    }
}
