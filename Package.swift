// swift-tools-version: 6.0
import Foundation
import PackageDescription

// Hearth: a pure-Swift, CPU-only inference engine for Phi-style language models.
// Module map and import rules: see docs/ARCHITECTURE.md.

// SIMD fast paths. Swift only reaches the AVX2/AVX-512 intrinsics when compiled for a CPU
// that has them, which needs `-target-cpu` — an unsafe flag that SwiftPM refuses in
// dependencies. So the fast path is opt-in through the environment: `HEARTH_CPU=native`
// (what scripts/setup.sh and scripts/test.sh use) or an explicit LLVM CPU name such as
// `znver4`, `skylake-avx512` or `haswell` (Swift's clang importer rejects the `x86-64-vN` names). Without it, Hearth builds the portable Swift kernels
// and stays usable as an ordinary package dependency. See docs/KERNELS.md.
let hearthCPU = ProcessInfo.processInfo.environment["HEARTH_CPU"].flatMap { $0.isEmpty || $0 == "none" ? nil : $0 }

/// x86 features the chosen CPU has, for `#if HEARTH_AVX512VNNI`-style conditions.
func x86Features(for cpu: String) -> [String] {
    var flags = Set<String>()
    if cpu == "native" {
        let info = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        if let line = info.split(separator: "\n").first(where: { $0.hasPrefix("flags") }) {
            flags = Set(line.split(separator: " ").map(String.init))
        }
    } else {
        let v3: Set = ["avx2", "fma", "f16c"]
        let v4 = v3.union(["avx512f", "avx512bw", "avx512vl"])
        switch cpu {
        case "haswell", "broadwell", "skylake", "alderlake", "znver2", "znver3": flags = v3
        case "skylake-avx512": flags = v4
        case "znver4", "znver5", "icelake-server", "sapphirerapids", "cascadelake", "tigerlake":
            flags = v4.union(["avx512_vnni"])
        default: flags = []
        }
    }
    var defines: [String] = []
    if flags.isSuperset(of: ["avx2", "fma", "f16c"]) { defines.append("HEARTH_AVX2") }
    if flags.isSuperset(of: ["avx512f", "avx512bw", "avx512vl"]) { defines.append("HEARTH_AVX512") }
    if defines.contains("HEARTH_AVX512") && (flags.contains("avx512_vnni") || flags.contains("avx512vnni")) {
        defines.append("HEARTH_AVX512VNNI")
    }
    return defines
}

let cpuSettings: [SwiftSetting] = {
    guard let cpu = hearthCPU else { return [] }
    var settings: [SwiftSetting] = [.unsafeFlags(["-target-cpu", cpu])]
    #if arch(x86_64)
    settings += x86Features(for: cpu).map { .define($0) }
    #endif
    return settings
}()

let package = Package(
    name: "Hearth",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "HearthKernels", targets: ["HearthKernels"]),
        .library(name: "HearthFormats", targets: ["HearthFormats"]),
        .library(name: "HearthTokenizers", targets: ["HearthTokenizers"]),
        .library(name: "HearthEngine", targets: ["HearthEngine"]),
        .library(name: "HearthProviders", targets: ["HearthProviders"]),
        .library(name: "HearthCloud", targets: ["HearthCloud"]),
        .library(name: "HearthLocal", targets: ["HearthLocal"]),
        .executable(name: "hearth", targets: ["hearth"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // HearthCloud only (the engine never links these): HTTP, WebSocket, TLS, HMAC.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        // System libraries, found through pkg-config (scripts/setup.sh installs them).
        .systemLibrary(
            name: "CBLAS", path: "Sources/CBLAS", pkgConfig: "openblas",
            providers: [.apt(["libopenblas-dev"]), .brew(["openblas"])]),
        .systemLibrary(
            name: "CSentencePiece", path: "Sources/CSentencePiece", pkgConfig: "sentencepiece",
            providers: [.apt(["libsentencepiece-dev"]), .brew(["sentencepiece"])]),
        .systemLibrary(
            name: "CZstd", path: "Sources/CZstd", pkgConfig: "libzstd",
            providers: [.apt(["libzstd-dev"]), .brew(["zstd"])]),
        // A tiny C ABI over libsentencepiece's C++ API, so no public module needs C++ interop.
        .target(name: "CSentencePieceShim", dependencies: ["CSentencePiece"], path: "Sources/CSentencePieceShim"),

        .target(
            name: "HearthKernels", dependencies: [.target(name: "CBLAS", condition: .when(platforms: [.linux]))],
            swiftSettings: cpuSettings),
        .target(name: "HearthFormats", dependencies: ["HearthKernels"], swiftSettings: cpuSettings),
        .target(name: "HearthTokenizers", dependencies: ["CSentencePieceShim"]),
        .target(
            name: "HearthEngine", dependencies: ["HearthKernels", "HearthFormats", "HearthTokenizers"],
            swiftSettings: cpuSettings),
        .executableTarget(
            name: "hearth",
            dependencies: [
                "HearthEngine", "HearthFormats", "HearthTokenizers", "HearthKernels",
                "HearthLocal", "HearthProviders", "HearthCloud", "CZstd",  // hearth chat
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),

        // Fixture paths and reference files shared by the test targets.
        .target(name: "HearthTestSupport", path: "Tests/HearthTestSupport"),
        .testTarget(name: "HearthKernelsTests", dependencies: ["HearthKernels"], swiftSettings: cpuSettings),
        .testTarget(name: "HearthFormatsTests", dependencies: ["HearthFormats", "HearthTestSupport"]),
        .testTarget(name: "HearthTokenizersTests", dependencies: ["HearthTokenizers", "HearthTestSupport"]),
        .testTarget(name: "HearthEngineTests", dependencies: ["HearthEngine", "HearthTestSupport"]),
        .testTarget(name: "HearthCLITests", dependencies: ["hearth", "HearthTestSupport"]),

        // The provider protocol and router (no engine import), and the cloud providers.
        .target(name: "HearthProviders"),
        // The engine behind the provider protocol.
        .target(name: "HearthLocal", dependencies: ["HearthEngine", "HearthProviders"]),
        .target(
            name: "HearthCloud",
            dependencies: [
                "HearthProviders",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .executableTarget(
            name: "hearth-fallback-example", dependencies: ["HearthProviders", "HearthCloud", "HearthLocal"],
            path: "Examples/FallbackExample"),
        .testTarget(name: "HearthProvidersTests", dependencies: ["HearthProviders"]),
        .testTarget(name: "HearthLocalTests", dependencies: ["HearthLocal", "HearthTestSupport"]),
        .testTarget(
            name: "HearthCloudTests",
            dependencies: [
                "HearthCloud", "HearthProviders",
                // Only for the end-to-end test: a cloud answer finished by LocalProvider on a fixture model.
                "HearthLocal", "HearthEngine", "HearthTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
    ]
)
