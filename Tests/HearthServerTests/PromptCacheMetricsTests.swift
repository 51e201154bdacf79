import Foundation
import Testing

@testable import HearthLocal
@testable import HearthServer

/// The prompt cache's figures on `/metrics`: counters per model that only grow (a reloaded
/// model's counts start again from zero and are added, not subtracted), gauges as they stand.
@Suite struct PromptCacheMetricsTests {
    static func value(_ text: String, _ name: String, model: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix("\(name){model=\"\(model)\"}") {
            return line.split(separator: " ").last.flatMap { Double($0) }
        }
        return nil
    }

    @Test func countersGrowAcrossAReload() {
        let metrics = ServerMetrics()
        var s = LocalPromptCacheStatistics()
        s.hits = 3
        s.misses = 2
        s.hitTokens = 640
        s.bytes = 1 << 20
        s.budget = 8 << 20
        s.evictions = 1
        metrics.recordPromptCache("m", s)
        s.hits = 5
        s.bytes = 2 << 20
        metrics.recordPromptCache("m", s)
        var text = metrics.render()
        #expect(Self.value(text, "hearth_prompt_cache_hits_total", model: "m") == 5)
        #expect(Self.value(text, "hearth_prompt_cache_misses_total", model: "m") == 2)
        #expect(Self.value(text, "hearth_prompt_cache_hit_tokens_total", model: "m") == 640)
        #expect(Self.value(text, "hearth_prompt_cache_evictions_total", model: "m") == 1)
        #expect(Self.value(text, "hearth_prompt_cache_bytes", model: "m") == Double(2 << 20))
        #expect(Self.value(text, "hearth_prompt_cache_budget_bytes", model: "m") == Double(8 << 20))
        // Reloaded: the engine counts from zero again.
        var reloaded = LocalPromptCacheStatistics()
        reloaded.hits = 2
        metrics.recordPromptCache("m", reloaded)
        text = metrics.render()
        #expect(Self.value(text, "hearth_prompt_cache_hits_total", model: "m") == 7)
        #expect(Self.value(text, "hearth_prompt_cache_bytes", model: "m") == 0)
    }
}
