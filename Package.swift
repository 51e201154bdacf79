// swift-tools-version: 6.2
import CompilerPluginSupport  // `.macro` (HearthMacrosPlugin)
import PackageDescription

// Hearth: a pure-Swift, CPU-only inference engine for Phi-style language models.
// Module map and import rules: see docs/ARCHITECTURE.md.

// SIMD kernels, one module per instruction-set level, each compiled for its own target CPU;
// HearthKernels picks the level at run time from CPUID (docs/KERNELS.md), so one build is fast
// on every CPU and a package that depends on Hearth gets the same kernels. Per-target
// `-target-cpu` is an unsafe flag, which SwiftPM accepts in dependencies from tools-version 6.2.
// The flags apply when the package is built on an x86-64 host (the level modules' sources are
// empty elsewhere).
//
// `features` adds LLVM target features: the VNNI level takes `fast-dpwssd`, without which LLVM's
// machine combiner (tuned for Cascade Lake) splits `vpdpwssd` chains into `vpmaddwd` + `vpaddd`,
// two instructions on the same pipes — measured 5% of batched decode on Zen 4 — and the AMX
// features, so that the `amx` level's tile kernel (AMXTiles.swift) can inline CHearthCPU's tile
// operations; LLVM emits AMX instructions only for those, which run only at that level.
func targetCPU(_ cpu: String, features: [String] = []) -> [SwiftSetting] {
    #if arch(x86_64)
    let featureFlags = features.flatMap { ["-Xcc", "-Xclang", "-Xcc", "-target-feature", "-Xcc", "-Xclang", "-Xcc", "+\($0)"] }
    return [.unsafeFlags(["-target-cpu", cpu] + featureFlags)] + optimizedInDebug
    #else
    return optimizedInDebug
    #endif
}

// The kernels and the engine are compiled optimized in debug builds too: at -Onone the SIMD
// kernels run 10-100x slower, which made the test suite's real-model and server tests slow
// and timing-sensitive (a stalled-reader test could not fill a socket in time). Everything else
// (providers, server, CLI) stays at -Onone for debugging. `-O` after SwiftPM's `-Onone` wins.
// Whole-module (`-whole-module-optimization`, as release builds compile): a debug build
// otherwise compiles file by file, and a generic defined in one file (the kernels' `Lanes8`)
// or a `let` behind an accessor was left unspecialized in another — runtime metadata lookups
// took a fifth of a real-model test's time; whole-module, the suite ran in 382 s instead of
// 600–666 s on a 2-core Sapphire Rapids VM, and a fresh debug build took 670 s (about as before).
// `-num-threads 2` keeps one object file per source file (SwiftPM's index store needs it). The
// driver says it ignores `-enable-batch-mode` for these modules: expected.
let optimizedInDebug: [SwiftSetting] = [.unsafeFlags(["-O", "-whole-module-optimization", "-num-threads", "2"], .when(configuration: .debug))]

// LLVM's SLP vectorizer off for the VNNI/AMX kernels: these are written in explicit SIMD types and
// intrinsics, and on their whole-module IR the pass ran for 82 s of a 159 s compile that it left
// 47 s without (one module, one core; the debug build's longest job at 215 s, repeated by the
// release and embedding builds: issue 60, CI's budget). Measured speed: docs/KERNELS.md.
let noSLPVectorizer: [SwiftSetting] = [.unsafeFlags(["-Xllvm", "-vectorize-slp=false"])]

// The `SystemLibraries` trait (on by default): on Linux, BLAS products go to OpenBLAS and the
// tests compare Hearth's Swift SentencePiece with libsentencepiece. Without it
// (`swift build --disable-default-traits`, or `traits: []` on the dependency) nothing links
// either library: Hearth's own GEMM does the BLAS products (docs/PLATFORMS.md). Apple platforms
// use Accelerate either way.
let systemLibraries: Set<String> = ["SystemLibraries"]

// The `ModelHub` trait (on by default): `LocalProvider.load("phi3.5-mini" | "org/repo:QUANT")`
// in HearthLocal, which resolves names and downloads through HearthHub (AsyncHTTPClient, NIO,
// swift-crypto). An app that loads models only from paths can leave it out (`traits: []`) and
// HearthLocal then builds without any HTTP stack — a release build of less than half the time
// (CI's embedding app: 300 s against 725 s on 2 cores).
let modelHub: Set<String> = ["ModelHub"]

let package = Package(
    name: "Hearth",
    platforms: [.macOS(.v15), .iOS(.v18)],
    // What an app can import. The lower modules (JSON to Engine) make public only what the app-facing
    // ones show in their API and what an app running the engine directly needs; what Hearth's modules
    // share is `package`. HearthTemplates shows nothing and is not a product. The public symbols are
    // listed in docs/public-api and checked by scripts/check-public-api.sh (docs/SWIFT-API.md#what-is-public).
    products: [
        .library(name: "HearthJSON", targets: ["HearthJSON"]),
        .library(name: "HearthKernels", targets: ["HearthKernels"]),
        .library(name: "HearthFormats", targets: ["HearthFormats"]),
        .library(name: "HearthTokenizers", targets: ["HearthTokenizers"]),
        .library(name: "HearthConstraints", targets: ["HearthConstraints"]),
        .library(name: "HearthEngine", targets: ["HearthEngine"]),
        .library(name: "HearthProviders", targets: ["HearthProviders"]),
        .library(name: "HearthCloud", targets: ["HearthCloud"]),
        .library(name: "HearthLocal", targets: ["HearthLocal"]),
        .library(name: "HearthServer", targets: ["HearthServer"]),
        .library(name: "HearthHub", targets: ["HearthHub"]),
        .library(name: "HearthMCP", targets: ["HearthMCP"]),
        .library(name: "HearthMacros", targets: ["HearthMacros"]),
        .executable(name: "hearth", targets: ["hearth"]),
    ],
    traits: [
        .trait(
            name: "SystemLibraries",
            description: "Link OpenBLAS (BLAS on Linux) and libsentencepiece (the tests' reference tokenizer)."),
        .trait(
            name: "ModelHub",
            description: "Models by name in HearthLocal (LocalProvider.load): the registry and the Hugging Face hub client (HearthHub)."),
        .default(enabledTraits: ["SystemLibraries", "ModelHub"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // HearthCloud only (the engine never links these): HTTP, WebSocket, TLS, HMAC.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        // HearthServer only (`hearth serve`): HTTP server, graceful shutdown, metrics, logging.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // Already Hummingbird's: HearthServer's request spans (exported over OTLP/HTTP when configured).
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.1.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        // HearthServer's gateway only: the usage ledger in SQLite (docs/SERVER.md#gateway).
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // HearthMCP only: the Model Context Protocol's Swift SDK (tools from MCP servers, docs/MCP.md).
        .package(url: "https://github.com/modelcontextprotocol/swift-sdk", "0.12.1"..<"0.13.0"),
        // HearthMacros only (`@Structured`): the macro plugin. HearthProviders, HearthLocal and
        // `hearth` do not depend on it, so a release build of the CLI never compiles swift-syntax.
        .package(url: "https://github.com/swiftlang/swift-syntax", from: "603.0.0"),
    ],
    targets: [
        // System libraries, found through pkg-config (scripts/setup.sh installs them); OpenBLAS and
        // libsentencepiece only with the SystemLibraries trait.
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

        // CPU feature detection (CPUID/XGETBV, getauxval, sysctl) for the kernel dispatch.
        .target(name: "CHearthCPU", path: "Sources/CHearthCPU"),
        // Kernel bodies shared by every level (compiled for the baseline here, inlined into each level).
        .target(name: "HearthKernelsCommon", swiftSettings: optimizedInDebug),
        .target(name: "HearthKernelsAVX2", dependencies: ["HearthKernelsCommon", "CHearthCPU"], swiftSettings: targetCPU("haswell")),
        .target(name: "HearthKernelsAVX512", dependencies: ["HearthKernelsCommon"], swiftSettings: targetCPU("skylake-avx512")),
        .target(name: "HearthKernelsAVX512VNNI", dependencies: ["HearthKernelsCommon", "CHearthCPU"], swiftSettings: targetCPU("cascadelake", features: ["fast-dpwssd", "amx-tile", "amx-int8"]) + noSLPVectorizer),
        .target(
            name: "HearthKernels",
            dependencies: [
                .target(name: "CBLAS", condition: .when(platforms: [.linux], traits: systemLibraries)), "CHearthCPU", "HearthKernelsCommon",
                "HearthKernelsAVX2", "HearthKernelsAVX512", "HearthKernelsAVX512VNNI",
            ],
            swiftSettings: optimizedInDebug),
        // Formats and tokenizers are optimized in debug builds too: every real-model test loads
        // a GGUF (a 262k-token vocabulary for the default model), which at -Onone took seconds.
        .target(name: "HearthFormats", dependencies: ["HearthKernels", "HearthJSON"], swiftSettings: optimizedInDebug),
        .target(
            name: "HearthTokenizers",
            dependencies: [
                .target(name: "CSentencePieceShim", condition: .when(platforms: [.linux], traits: systemLibraries)),
                "HearthTemplates",  // a model's own chat template, compiled at load (issue 58)
            ],
            swiftSettings: optimizedInDebug),
        // Structured output: JSON Schema, regular expressions and GBNF grammars compiled to token
        // masks (depends on nothing; it sees a vocabulary only as token byte strings).
        // Optimized in debug builds too: its tests compare every token's mask with a brute-force
        // Earley parse over whole vocabularies, and the server's structured-output tests mask
        // the default model's 262k-token vocabulary at every step.
        .target(name: "HearthConstraints", dependencies: ["HearthJSON"], swiftSettings: optimizedInDebug),
        // The one JSON value type, its byte parser and its writer (depends on nothing; issue 60).
        // Optimized in debug builds too: the server parses every request body with it.
        .target(name: "HearthJSON", swiftSettings: optimizedInDebug),
        .testTarget(name: "HearthJSONTests", dependencies: ["HearthJSON"]),
        // Chat templates: a Jinja interpreter for the templates model files ship (depends on
        // nothing; issue 58).
        .target(name: "HearthTemplates", dependencies: ["HearthJSON"], swiftSettings: optimizedInDebug),
        .testTarget(
            name: "HearthConstraintsTests", dependencies: ["HearthConstraints", "HearthTestSupport"], swiftSettings: optimizedInDebug),
        // The chat-template corpus (88 real templates x 30 conversations against transformers) and fuzz tests.
        .testTarget(name: "HearthTemplatesTests", dependencies: ["HearthTemplates"], swiftSettings: optimizedInDebug),
        .target(
            name: "HearthEngine",
            dependencies: [
                "HearthKernels", "HearthFormats", "HearthTokenizers", "HearthConstraints", "HearthTemplates", "HearthJSON",
                .product(name: "Logging", package: "swift-log"),  // the repack cache's debug lines
            ],
            swiftSettings: optimizedInDebug),
        .executableTarget(
            name: "hearth",
            dependencies: [
                "HearthEngine", "HearthFormats", "HearthTokenizers", "HearthKernels",
                "HearthLocal", "HearthProviders", "HearthCloud",  // hearth chat
                "HearthServer", .product(name: "Logging", package: "swift-log"),  // hearth serve
                "HearthHub",  // hearth pull, list, rm; model names wherever a path is accepted
                "HearthTemplates",  // hearth bench-template
                "HearthMCP",  // hearth chat --mcp
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            plugins: ["HearthBuildInfo"]),  // `hearth --version`: the git description of the build
        // Writes the `hearth` target's BuildCommit.swift (`git describe`) before each build.
        .plugin(name: "HearthBuildInfo", capability: .buildTool(), path: "Plugins/HearthBuildInfo"),

        // Fixture paths and reference files shared by the test targets.
        .target(name: "HearthTestSupport", path: "Tests/HearthTestSupport", swiftSettings: optimizedInDebug),
        .testTarget(name: "HearthKernelsTests", dependencies: ["HearthKernels", "HearthTestSupport"]),
        .testTarget(name: "HearthFormatsTests", dependencies: ["HearthFormats", "HearthTestSupport"]),
        .testTarget(name: "HearthTokenizersTests", dependencies: ["HearthTokenizers", "HearthTemplates", "HearthTestSupport"]),
        .testTarget(name: "HearthEngineTests", dependencies: ["HearthEngine", "HearthTestSupport"]),
        // `dashscope-fake` is built for the CLI test that points `hearth chat --provider bailian` at it.
        .testTarget(name: "HearthCLITests", dependencies: ["hearth", "dashscope-fake", "hub-fake", "HearthTestSupport", "HearthFakeServers"]),

        // The provider protocol and router (no engine import), and the cloud providers.
        .target(name: "HearthProviders", dependencies: ["HearthJSON"]),
        // The engine behind the provider protocol.
        .target(
            name: "HearthLocal",
            dependencies: [
                "HearthEngine", "HearthProviders", "HearthConstraints", "HearthTemplates", "CZstd",
                .target(name: "HearthHub", condition: .when(traits: modelHub)),
            ]),
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
        // `hearth serve`: OpenAI- and Anthropic-compatible HTTP over LocalProvider (no engine import),
        // and the gateway (`--config`): keys, signatures, limits, usage in SQLite, cache, cloud routes.
        .target(
            name: "HearthServer",
            dependencies: [
                "HearthProviders", "HearthLocal", "HearthCloud", "HearthJSON",
                // Only to name the keyword or position of a schema the local model cannot enforce.
                "HearthConstraints",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),  // HTTPServerBuilder (HearthServer.httpServer)
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]),
        .testTarget(
            name: "HearthServerTests",
            dependencies: [
                "HearthServer", "HearthLocal", "HearthProviders", "HearthTestSupport", "HearthFakeServers",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),  // Hearth's routes in an app's router
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]),
        .executableTarget(
            name: "hearth-fallback-example", dependencies: ["HearthProviders", "HearthCloud", "HearthLocal"],
            path: "Examples/FallbackExample"),
        // An app's own Hummingbird server with Hearth's routes mounted beside its own (issue 64 item 5).
        .executableTarget(
            name: "hearth-server-in-app-example",
            dependencies: [
                "HearthServer", "HearthLocal", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"), .product(name: "Logging", package: "swift-log"),
            ],
            path: "Examples/ServerInApp"),
        .testTarget(name: "HearthProvidersTests", dependencies: ["HearthProviders", "HearthTestSupport"]),
        // Schemas from Swift types (issue 64 item 3): `@Structured` and `@SchemaGuide` declared in
        // HearthMacros, expanded by a compiler plugin over swift-syntax. Only these targets (and
        // the ten-line app) build swift-syntax; the protocol they conform to, StructuredOutput, is
        // HearthProviders'.
        .macro(
            name: "HearthMacrosPlugin",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
            ]),
        .target(name: "HearthMacros", dependencies: ["HearthMacrosPlugin", "HearthProviders"]),
        .testTarget(
            name: "HearthMacrosTests",
            dependencies: [
                // Not the plugin nor swift-syntax: linked into a test, swift-syntax would build a
                // second time (for the target beside the host's plugin). The diagnostics test
                // drives the compiler with the built plugin instead.
                "HearthMacros", "HearthProviders", "HearthLocal", "HearthTestSupport",
            ]),
        // The ten-line app: a model by name, a streamed reply, a City from respond(generating:), a typed tool.
        .executableTarget(name: "hearth-ten-line-app", dependencies: ["HearthLocal", "HearthMacros"], path: "Examples/TenLineApp"),
        // Fake servers on loopback sockets for the cloud providers' tests: scripted HTTP and
        // WebSocket servers, and protocol fakes of DashScope's generation API and Bailian's dialog.
        .target(
            name: "HearthFakeServers",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),  // the fake hub's sha256 and git blob ids
            ],
            path: "Tests/HearthFakeServers"),
        // The DashScope fakes as a program (scripts/check-dashscope-fakes.sh, the CLI tests).
        .executableTarget(
            name: "dashscope-fake",
            dependencies: ["HearthFakeServers", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Tests/DashScopeFake"),
        .testTarget(name: "HearthLocalTests", dependencies: ["HearthLocal", "HearthHub", "HearthTestSupport", "HearthFakeServers"]),
        // Models by name: the Hugging Face hub client and its cache layout (shared with Python's
        // huggingface_hub), over AsyncHTTPClient; sha256 through swift-crypto. No engine import.
        .target(
            name: "HearthHub",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(name: "HearthHubTests", dependencies: ["HearthHub", "HearthFakeServers", "HearthTestSupport"]),
        // Tools from MCP servers (stdio and streamable HTTP) through the official Swift SDK, as
        // Hearth tools (`hearth chat --mcp`, `respond(to:tools:)`). No engine import.
        .target(
            name: "HearthMCP",
            dependencies: [
                "HearthProviders", .product(name: "MCP", package: "swift-sdk"), .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "HearthMCPTests",
            dependencies: [
                "HearthMCP", "HearthProviders", "HearthTestSupport", .product(name: "MCP", package: "swift-sdk"),
                "HearthLocal",  // the offline fallback with MCP tools (a fixture model)
            ]),
        // The fake hub as a program (scripts/check-hub.sh points huggingface_hub at it; the CLI tests).
        .executableTarget(
            name: "hub-fake",
            dependencies: ["HearthFakeServers", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Tests/HubFake"),
        .testTarget(
            name: "HearthCloudTests",
            dependencies: [
                "HearthCloud", "HearthProviders", "HearthFakeServers",
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
