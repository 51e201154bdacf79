// swift-tools-version: 6.0
import PackageDescription

// Hearth: a pure-Swift, CPU-only inference engine for Phi-style language models.
// Module map and import rules: see docs/ARCHITECTURE.md.

let package = Package(
    name: "Hearth",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "HearthKernels", targets: ["HearthKernels"]),
        .library(name: "HearthFormats", targets: ["HearthFormats"]),
        .library(name: "HearthTokenizers", targets: ["HearthTokenizers"]),
        .library(name: "HearthEngine", targets: ["HearthEngine"]),
        .executable(name: "hearth", targets: ["hearth"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
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

        .target(name: "HearthKernels", dependencies: [.target(name: "CBLAS", condition: .when(platforms: [.linux]))]),
        .target(name: "HearthFormats", dependencies: ["HearthKernels"]),
        .target(name: "HearthTokenizers", dependencies: ["CSentencePieceShim"]),
        .target(name: "HearthEngine", dependencies: ["HearthKernels", "HearthFormats", "HearthTokenizers"]),
        .executableTarget(
            name: "hearth",
            dependencies: [
                "HearthEngine", "HearthFormats", "HearthTokenizers",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),

        // Fixture paths and reference files shared by the test targets.
        .target(name: "HearthTestSupport", path: "Tests/HearthTestSupport"),
        .testTarget(name: "HearthKernelsTests", dependencies: ["HearthKernels"]),
        .testTarget(name: "HearthFormatsTests", dependencies: ["HearthFormats", "HearthTestSupport"]),
        .testTarget(name: "HearthTokenizersTests", dependencies: ["HearthTokenizers", "HearthTestSupport"]),
        .testTarget(name: "HearthEngineTests", dependencies: ["HearthEngine", "HearthTestSupport"]),
        .testTarget(name: "HearthCLITests", dependencies: ["hearth", "HearthTestSupport"]),
    ]
)
