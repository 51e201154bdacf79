import ArgumentParser
import Foundation
import HearthTokenizers

/// `hearth bench-tokenizer`: load and encode time of a SentencePiece `tokenizer.model` with
/// Hearth's Swift SentencePiece, against libsentencepiece in the same run when the build has it.
struct BenchTokenizer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-tokenizer",
        abstract: "Time loading a tokenizer.model (and encoding a text) in Swift and, in builds with libsentencepiece, with it.",
        discussion: """
            Loads alternate between the two implementations (Swift first, then libsentencepiece,
            --runs times); each figure is the median. Ratios are libsentencepiece's time over
            Swift's (above 1: Swift is faster). Builds without the SystemLibraries trait time
            Swift alone.
            """)

    @Argument(help: "A SentencePiece tokenizer.model.")
    var model: String

    @Option(name: .long, help: "A UTF-8 text file to encode (each run encodes it whole).")
    var text: String?

    @Option(name: .long, help: "Timed runs of each implementation.")
    var runs: Int = 21

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func validate() throws {
        if runs < 1 { throw ValidationError("--runs must be ≥ 1") }
    }

    struct Figures: Encodable {
        var pieces = 0
        var swift_load_ms = 0.0
        var swift_encode_ms: Double?
        var libsentencepiece_load_ms: Double?
        var libsentencepiece_encode_ms: Double?
        var load_ratio: Double?
        var encode_ratio: Double?
        var ids_equal: Bool?
    }

    func run() throws {
        try reportingErrors {
            guard let data = FileManager.default.contents(atPath: model) else {
                throw ValidationError("cannot read \(model)")
            }
            let body = try text.map { try String(contentsOfFile: $0, encoding: .utf8) }
            var figures = Figures()
            var swiftLoads: [Double] = [], swiftEncodes: [Double] = []
            var systemLoads: [Double] = [], systemEncodes: [Double] = []
            var swiftIDs: [Int32] = [], systemIDs: [Int32] = []
            for _ in 0..<runs {
                var start = DispatchTime.now()
                let swiftModel = try SentencePieceModel(protoBytes: data, path: model)
                swiftLoads.append(milliseconds(since: start))
                figures.pieces = swiftModel.vocabularySize
                if let body {
                    start = DispatchTime.now()
                    swiftIDs = try swiftModel.encode(body)
                    swiftEncodes.append(milliseconds(since: start))
                }
                #if SystemLibraries && os(Linux)
                start = DispatchTime.now()
                let systemModel = try SystemSentencePieceModel(protoBytes: data, path: model)
                systemLoads.append(milliseconds(since: start))
                if let body {
                    start = DispatchTime.now()
                    systemIDs = try systemModel.encode(body)
                    systemEncodes.append(milliseconds(since: start))
                }
                #endif
            }
            func median(_ values: [Double]) -> Double? { values.isEmpty ? nil : values.sorted()[values.count / 2] }
            figures.swift_load_ms = median(swiftLoads) ?? 0
            figures.swift_encode_ms = median(swiftEncodes)
            figures.libsentencepiece_load_ms = median(systemLoads)
            figures.libsentencepiece_encode_ms = median(systemEncodes)
            if let system = figures.libsentencepiece_load_ms { figures.load_ratio = system / figures.swift_load_ms }
            if let system = figures.libsentencepiece_encode_ms, let swift = figures.swift_encode_ms {
                figures.encode_ratio = system / swift
                figures.ids_equal = swiftIDs == systemIDs
            }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                print(String(decoding: try encoder.encode(figures), as: UTF8.self))
                return
            }
            func format(_ v: Double?) -> String { v.map { String(format: "%.3f", $0) } ?? "—" }
            print("| | load ms | encode ms |")
            print("|---|---|---|")
            print("| Swift (\(figures.pieces) pieces) | \(format(figures.swift_load_ms)) | \(format(figures.swift_encode_ms)) |")
            print("| libsentencepiece | \(format(figures.libsentencepiece_load_ms)) | \(format(figures.libsentencepiece_encode_ms)) |")
            print("| libsentencepiece ÷ Swift | \(format(figures.load_ratio)) | \(format(figures.encode_ratio)) |")
            if let equal = figures.ids_equal { print("ids equal: \(equal)") }
        }
    }
}
