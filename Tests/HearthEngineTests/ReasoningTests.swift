import Foundation
import HearthTestSupport
import HearthTokenizers
import Testing

@testable import HearthEngine

/// Reasoning in the engine (issue 57, item 3): the splitter keeps every byte of a `<think>`
/// block out of the answer however the tags are split across tokens, and a generation on the
/// reasoning fixture (Phi-4-mini-reasoning's shape, template and tags; random weights driven by
/// a logit bias) splits exactly at the tags and closes the block within its budget.
@Suite struct ReasoningTests {
    static let format = ReasoningFormat(open: "<think>", close: "</think>", separator: "\n\n", openID: 1811, closeID: 1812)

    /// Feeds `pieces` to a splitter and returns the reasoning and answer it made.
    static func split(_ pieces: [String], opened: Bool = false) -> (reasoning: String, answer: String) {
        var splitter = ReasoningSplitter(format: format, opened: opened)
        var reasoning = ""
        var answer = ""
        for piece in pieces {
            let (r, a) = splitter.push(piece)
            reasoning += r
            answer += a
        }
        let rest = splitter.finish()
        return (reasoning + rest.reasoning, answer + rest.answer)
    }

    @Test func wholeTags() {
        let out = Self.split(["<think>", "\n", "Two", " and two", "</think>", "\n\n", "Four", "."])
        #expect(out.reasoning == "Two and two")
        #expect(out.answer == "Four.")
    }

    /// Every way of cutting the reply into pieces gives the same parts: a tag split across
    /// tokens never leaks.
    @Test func tagsSplitAnywhere() {
        let reply = "  <think>\nweigh a < b and </thin k></think>\n\nA <b>bold</b> answer"
        for cut in 1..<reply.count {
            for second in stride(from: cut + 1, to: reply.count, by: 3) {
                let a = String(reply.prefix(cut))
                let b = String(reply.dropFirst(cut).prefix(second - cut))
                let c = String(reply.dropFirst(second))
                let out = Self.split([a, b, c])
                #expect(out.reasoning == "weigh a < b and </thin k>", "cut at \(cut), \(second)")
                #expect(out.answer == "A <b>bold</b> answer", "cut at \(cut), \(second)")
            }
        }
    }

    @Test func openedByThePrompt() {
        let out = Self.split(["Hmm", ".</", "think>", "\n\nYes"], opened: true)
        #expect(out.reasoning == "Hmm.")
        #expect(out.answer == "Yes")
    }

    @Test func replyWithoutABlockIsAllAnswer() {
        #expect(Self.split(["<th", "ese are ", "words"]) == ("", "<these are words"))
        #expect(Self.split([" Plain", " text"]) == ("", " Plain text"))
        #expect(Self.split(["<th"]) == ("", "<th"))  // an undecided start at the end is answer
    }

    @Test func blockCutShortKeepsItsReasoning() {
        #expect(Self.split(["<think>", "still thinking </thi"]) == ("still thinking </thi", ""))
    }

    @Test func promptOpensAndNoThinkForm() {
        #expect(Self.format.promptOpens("<|im_start|>assistant\n<think>\n"))
        #expect(!Self.format.promptOpens("<|assistant|>"))
        #expect(Self.format.noThinkSuffix(promptOpens: false) == "<think>\n\n</think>\n\n")
        #expect(Self.format.noThinkSuffix(promptOpens: true) == "\n</think>\n\n")
    }

    static let fixture = "phi4-mini-reasoning-tiny"

    struct Reference: Decodable {
        struct Chat: Decodable { var prompt: String; var ids: [Int32] }
        var think: [Int32]
        var end_think: [Int32]
        var separator: [Int32]
        var no_think: [Int32]
        var chats: [Chat]
    }

    static func reference() throws -> Reference {
        let url = Fixtures.checkpoint(fixture).appendingPathComponent("reference.json")
        return try JSONDecoder().decode(Reference.self, from: Data(contentsOf: url))
    }

    /// The fixture's tags are found in its vocabulary, and tokenize as transformers does.
    @Test func fixtureFormatAndTokens() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(Self.fixture).path)
        let reference = try Self.reference()
        let format = try #require(model.reasoningFormat)
        #expect([format.openID] == reference.think && [format.closeID] == reference.end_think)
        #expect(try model.tokenizer.encode("<think>\n\n</think>\n\n", addSpecialTokens: false) == reference.no_think)
        for chat in reference.chats {
            #expect(try model.tokenizer.encode(chat.prompt, addSpecialTokens: false) == chat.ids)
        }
        // The models without the tags do not reason.
        let instruct = try TransformerModel(path: Fixtures.checkpoint("phi4-mini-tiny").path)
        #expect(instruct.reasoningFormat == nil)
    }

    /// Generates on the fixture with the block opened by a logit bias (the opening tag first,
    /// the closing tag and end tokens banned, so only the budget ends the block); returns the
    /// tokens and summary.
    static func run(budget: Int, seed: UInt64, opened: Bool = false, maxTokens: Int = 40) throws
        -> (tokens: [GeneratedToken], summary: GenerationSummary, model: TransformerModel)
    {
        let model = try TransformerModel(path: Fixtures.checkpoint(fixture).path)
        let generator = try Generator(model: model, context: 128, threads: 2)
        let format = try #require(model.reasoningFormat)
        var parameters = GenerationParameters()
        parameters.maxTokens = maxTokens
        parameters.sampling = SamplingOptions()
        parameters.sampling.temperature = 1
        parameters.sampling.seed = seed
        parameters.sampling.logitBias = [format.openID: 100, format.closeID: -100]
        for id in model.eosIDs { parameters.sampling.logitBias[id] = -100 }
        parameters.reasoning = try ReasoningControl(format: format, opened: opened, budget: budget, tokenizer: model.tokenizer)
        var prompt = try reference().chats[0].ids
        if opened { prompt += [format.openID] }
        var tokens: [GeneratedToken] = []
        let summary = try generator.run(prompt: prompt, parameters: parameters) { tokens.append($0) }
        return (tokens, summary, model)
    }

    /// The reply's reasoning and answer are exactly the text between the tags and after the
    /// separator of the whole decoded reply; the block's tokens are at most the budget plus the
    /// closing sequence, and an answer follows.
    @Test(arguments: [(3, 1), (8, 2), (8, 3), (15, 4)] as [(Int, UInt64)])
    func budgetClosesTheBlockAndTheSplitIsExact(budget: Int, seed: UInt64) throws {
        let (tokens, summary, model) = try Self.run(budget: budget, seed: seed)
        let closing = 1 + (try model.tokenizer.encode("\n\n", addSpecialTokens: false)).count
        let reasoning = tokens.map(\.reasoning).joined()
        let answer = tokens.map(\.text).joined()
        let whole = model.tokenizer.decode(tokens.map(\.id), skipSpecialTokens: false)
        let open = try #require(whole.range(of: "<think>"))
        let close = try #require(whole.range(of: "</think>"))
        let lead = whole[..<open.lowerBound]
        #expect(lead.allSatisfy { $0.isWhitespace })
        #expect(reasoning == String(whole[open.upperBound..<close.lowerBound]).trimmingLeadingWhitespace)
        #expect(answer == String(whole[close.upperBound...]).trimmingLeadingWhitespace)
        #expect(!answer.isEmpty)
        #expect(summary.reasoningTokens <= budget + closing)
        #expect(summary.reasoningTokens == budget + closing)  // the bias keeps the block open until the budget
        #expect(tokens.filter(\.inReasoning).count == summary.reasoningTokens)
        #expect(tokens.filter(\.endsReasoning).count == 1)
    }

    /// A template that opens the block in the prompt (Qwen3's `<think>\n`): the first token is
    /// reasoning, and the budget counts from it.
    @Test func promptOpenedBlock() throws {
        let (tokens, summary, model) = try Self.run(budget: 5, seed: 7, opened: true)
        let closing = 1 + (try model.tokenizer.encode("\n\n", addSpecialTokens: false)).count
        #expect(summary.reasoningTokens == 5 + closing)
        #expect(tokens[5].id == model.reasoningFormat?.closeID)
        #expect(!tokens.map(\.text).joined().isEmpty)
        #expect(!tokens.map(\.text).joined().contains("think>"))
    }
}

extension String {
    fileprivate var trimmingLeadingWhitespace: String { String(drop { $0.isWhitespace }) }
}
