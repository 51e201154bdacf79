import ArgumentParser
import Foundation
import HearthEngine

struct Tokenize: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the token ids of a text as a JSON array.")

    @OptionGroup var model: ModelOptions

    @Option(name: .long, help: "The text to tokenize.")
    var text: String?

    @Option(name: .long, help: "A UTF-8 file to tokenize instead of --text.")
    var file: String?

    @Option(name: .long, help: "Encode the text this many times and print the fastest time to stderr (µs per byte).")
    var time: Int?

    @Flag(name: .long, help: "Do not add the BOS token (by default it is added as the tokenizer config says).")
    var noBos = false

    func run() throws {
        try reportingErrors {
            let text: String
            switch (self.text, file) {
            case (let given?, nil): text = given
            case (nil, let path?):
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw ValidationError("cannot read \(path)")
                }
                text = String(decoding: data, as: UTF8.self)
            default: throw ValidationError("give --text or --file (one of them)")
            }
            let lm = try model.load()
            var ids = try lm.tokenizer.encode(text, addSpecialTokens: true)
            if let runs = time, runs > 0 {
                var best = Double.infinity
                for _ in 0..<runs {
                    let start = DispatchTime.now().uptimeNanoseconds
                    _ = try lm.tokenizer.encode(text, addSpecialTokens: true)
                    best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
                }
                let bytes = max(1, text.utf8.count)
                FileHandle.standardError.write(Data(String(
                    format: "%d bytes -> %d tokens: %.1f ms, %.3f µs/byte (fastest of %d)\n",
                    text.utf8.count, ids.count, best * 1e3, best / Double(bytes) * 1e6, runs).utf8))
            }
            if noBos, let bos = lm.tokenizer.bosID, ids.first == bos, lm.tokenizer.addsBOS { ids.removeFirst() }
            emit("[" + ids.map(String.init).joined(separator: ",") + "]\n")
        }
    }
}
