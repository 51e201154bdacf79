import HearthProviders
import Testing

/// The one validation of generation options, and the guard that ends replies repeating themselves.
@Suite struct GenerationOptionsTests {
    @Test func validateRefusesWhatTheEngineRefuses() {
        #expect(throws: Never.self) { try ChatOptions().validate() }
        #expect(throws: Never.self) {
            try ChatOptions(temperature: 0, topP: 1, topK: 0, minP: 0, maxTokens: 1, repetitionPenalty: 1.1).validate()
        }
        let refused: [(ChatOptions, String)] = [
            (ChatOptions(minP: 1), "min_p"), (ChatOptions(topP: 0), "top_p"),
            (ChatOptions(temperature: -0.1), "temperature"), (ChatOptions(topK: -1), "top_k"),
            (ChatOptions(maxTokens: 0), "max_tokens"), (ChatOptions(repetitionPenalty: 0), "repetition_penalty"),
            (ChatOptions(temperature: .nan), "temperature"),
        ]
        for (options, field) in refused {
            #expect(throws: InvalidGenerationOption.self) { try options.validate() }
            do { try options.validate() } catch { #expect(error.field == field && error.message.hasPrefix(field)) }
        }
    }

    /// A line a third time: held back while it comes, the reply ends before it.
    @Test func guardEndsBeforeALineStandsAThirdTime() {
        var guardian = RepetitionGuard()
        var shown = ""
        for piece in ["The model is ", "called a model.\n", "Hi\n", "The model is called", " a model.\n", "The model", " is called a model.\n", "more\n"] {
            shown += guardian.feed(piece)
        }
        #expect(guardian.stopped)
        #expect(shown == "The model is called a model.\nHi\nThe model is called a model.\n")
        #expect(guardian.text == shown)
    }

    /// A sentence looping within one line ends the reply; the kept text loses the third copy.
    @Test func guardEndsASpanRepeatedThreeTimes() {
        var guardian = RepetitionGuard()
        var shown = ""
        for _ in 0..<10 where !guardian.stopped { shown += guardian.feed("Paris is nice. ") }
        #expect(guardian.stopped)
        #expect(guardian.text == "Paris is nice. Paris is nice. ")
        #expect(shown.hasPrefix(guardian.text))
    }

    /// Ordinary text passes untouched, including repeated blank lines and fences.
    @Test func guardLeavesOrdinaryTextAlone() {
        var guardian = RepetitionGuard()
        let reply = "Here:\n\n```\nx = 1\n```\n\n```\ny = 2\n```\n\n```\nz\n```\nDone, and done well."
        var shown = ""
        for character in reply { shown += guardian.feed(String(character)) }
        shown += guardian.finish()
        #expect(!guardian.stopped)
        #expect(shown == reply)
        #expect(guardian.text == reply)
    }

    /// A reply the default model looped on (benchmarks/first-run/after-instruct.txt, question 1).
    @Test func guardEndsARealLoop() {
        let reply = "Which country has a large population and rich land resources? staanpopulation\nWhich countries have more than 100 million people? staanpopulation\nWhat are some of the world's richest countries? staanpopulation\nWhat is the name of one of the world's richest countries? staanpopulation\nWhich word means \"rich\" or \"wealthy\"? staanpopulation\nWhich word means \"favorable\" or \"successful\"? staanpopulation\nWhich word means \"well-organized and prosperous\"? staanpopulation\nWhich word means \"highly developed\"? staanpopulation\nWhat is a country that has the world's largest population? staanpopulation\nWhich word means \"rich\"? staanpopulation\nWhich word means \"unfriendly\"? staanpopulation\nWhat does the word \"wealthy\" mean in English? staanpopulation\nWhich word means \"well-organized and prosperous\"? staanpopulation\nWhich word means \"highly developed\"? staanpopulation\nWhich word means \"rich\"? staanpopulation\nWhich word means \"unfriendly\"? staanpopulation\nWhich word means \"well-organized and prosperous\"? staanpopulation"
        var guardian = RepetitionGuard()
        var shown = ""
        for piece in reply.split(separator: " ", omittingEmptySubsequences: false) where !guardian.stopped {
            shown += guardian.feed(String(piece) + " ")
        }
        shown += guardian.finish()  // the model stopped right after the third copy
        let lines = shown.split(separator: "\n").map(String.init)
        #expect(guardian.stopped)
        #expect(Dictionary(lines.map { ($0, 1) }, uniquingKeysWith: +).values.allSatisfy { $0 <= 2 }, "\(shown)")
    }
}
