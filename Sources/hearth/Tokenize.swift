import ArgumentParser
import Foundation
import HearthEngine

struct Tokenize: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the token ids of a text as a JSON array.")

    @OptionGroup var model: ModelOptions

    @Option(name: .long, help: "The text to tokenize.")
    var text: String

    @Flag(name: .long, help: "Do not add the BOS token (by default it is added as the tokenizer config says).")
    var noBos = false

    func run() throws {
        try reportingErrors {
            let lm = try model.load()
            var ids = try lm.tokenizer.encode(text, addSpecialTokens: true)
            if noBos, let bos = lm.tokenizer.bosID, ids.first == bos, lm.tokenizer.addsBOS { ids.removeFirst() }
            emit("[" + ids.map(String.init).joined(separator: ",") + "]\n")
        }
    }
}
