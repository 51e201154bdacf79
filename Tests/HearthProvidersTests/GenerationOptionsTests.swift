import HearthProviders
import Testing

/// The one validation of generation options, and the guard that ends replies repeating themselves.
@Suite struct GenerationOptionsTests {
    @Test func validateRefusesWhatTheEngineRefuses() {
        #expect(throws: Never.self) { try GenerationOptions().validate() }
        #expect(throws: Never.self) {
            try GenerationOptions(temperature: 0, topP: 1, topK: 0, minP: 0, maxTokens: 1, repetitionPenalty: 1.1).validate()
        }
        let refused: [(GenerationOptions, String)] = [
            (GenerationOptions(minP: 1), "min_p"), (GenerationOptions(topP: 0), "top_p"),
            (GenerationOptions(temperature: -0.1), "temperature"), (GenerationOptions(topK: -1), "top_k"),
            (GenerationOptions(maxTokens: 0), "max_tokens"), (GenerationOptions(repetitionPenalty: 0), "repetition_penalty"),
            (GenerationOptions(temperature: .nan), "temperature"),
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
}
