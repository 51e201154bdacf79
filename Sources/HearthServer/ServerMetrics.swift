import Foundation
import HearthLocal
import Prometheus
import Synchronization

/// The server's Prometheus metrics (`GET /metrics`). Names follow Prometheus conventions
/// (`_total` counters, `_seconds` histograms); docs/SERVER.md lists them with vLLM's equivalents.
final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    let running: Gauge
    let waiting: Gauge
    let admitted: Gauge
    let kvCacheUsage: Gauge
    let promptTokens: Counter
    let generatedTokens: Counter
    let cachedPromptTokens: Counter
    let draftedTokens: Counter
    let acceptedDraftTokens: Counter
    let budgetShapedTokens: Counter
    let budgetShapedAnswers: Counter
    let rejected: Counter
    let timeToFirstToken: ValueHistogram
    let timePerOutputToken: ValueHistogram
    let requestDuration: ValueHistogram

    init() {
        running = registry.makeGauge(name: "hearth_requests_running", help: "Requests decoding in a sequence slot now.")
        waiting = registry.makeGauge(name: "hearth_requests_waiting", help: "Requests admitted and waiting for a sequence slot.")
        admitted = registry.makeGauge(
            name: "hearth_requests_admitted", help: "Generation requests accepted and not yet finished (running, waiting or being written).")
        kvCacheUsage = registry.makeGauge(
            name: "hearth_kv_cache_usage_ratio", help: "Share of the KV cache's positions (all slots) holding tokens, 0 to 1.")
        promptTokens = registry.makeCounter(name: "hearth_prompt_tokens_total", help: "Prompt tokens of finished requests.")
        cachedPromptTokens = registry.makeCounter(
            name: "hearth_prompt_tokens_cached_total", help: "Prompt tokens served from the KV cache (prefix reuse).")
        generatedTokens = registry.makeCounter(name: "hearth_generation_tokens_total", help: "Tokens generated.")
        draftedTokens = registry.makeCounter(
            name: "hearth_speculative_draft_tokens_total", help: "Tokens drafted for speculative verification (prompt lookup or a draft model).")
        acceptedDraftTokens = registry.makeCounter(
            name: "hearth_speculative_accepted_tokens_total",
            help: "Drafted tokens the model accepted: generated tokens that took no decode step of their own.")
        budgetShapedTokens = registry.makeCounter(
            name: "hearth_budget_shaped_tokens_total",
            help: "Tokens of structured answers the finish-in-budget rule chose so the answer ended complete within max_tokens.")
        budgetShapedAnswers = registry.makeCounter(
            name: "hearth_budget_shaped_answers_total", help: "Structured answers the finish-in-budget rule shaped (at least one token).")
        rejected = registry.makeCounter(
            name: "hearth_requests_rejected_total", help: "Generation requests refused with 503 because the queue was full or the server was not ready.")
        let latency: [Double] = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5, 5, 10]
        timeToFirstToken = registry.makeValueHistogram(
            name: "hearth_time_to_first_token_seconds", buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
            help: "Seconds from admitting a request to its first generated token.")
        timePerOutputToken = registry.makeValueHistogram(
            name: "hearth_time_per_output_token_seconds", buckets: latency,
            help: "Seconds between consecutive generated tokens of one request.")
        requestDuration = registry.makeValueHistogram(
            name: "hearth_request_duration_seconds", buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
            help: "Seconds from admitting a generation request to its last byte.")
    }

    /// Counts a finished request by endpoint and HTTP status.
    func countRequest(endpoint: String, status: Int) {
        registry.makeCounter(
            name: "hearth_requests_total", labels: [("endpoint", endpoint), ("status", String(status))],
            help: "Generation requests by endpoint and HTTP status."
        ).increment()
    }

    /// One local model's state, labelled with its name (a server can serve several).
    func recordModel(_ model: String, loaded: Bool, running: Int, waiting: Int, kvCacheUsage: Double) {
        let labels = [("model", model)]
        registry.makeGauge(name: "hearth_model_loaded", labels: labels, help: "1 while the model is loaded (or loading), 0 when it is not.")
            .set(to: loaded ? 1 : 0)
        registry.makeGauge(name: "hearth_model_requests_running", labels: labels, help: "Requests decoding on this model now.")
            .set(to: Double(running))
        registry.makeGauge(name: "hearth_model_requests_waiting", labels: labels, help: "Requests waiting for a slot of this model.")
            .set(to: Double(waiting))
        registry.makeGauge(name: "hearth_model_kv_cache_usage_ratio", labels: labels, help: "Share of this model's KV cache holding tokens, 0 to 1.")
            .set(to: kvCacheUsage)
    }

    /// One local model's KV cache storage (`--kv-type`): bytes allocated and bytes per token,
    /// labelled with the model and the KV type, so a quantized cache's halved (q8_0) or
    /// quartered (q4_0) memory shows beside the usage ratio.
    func recordKVStorage(_ model: String, type: String, bytes: Int, bytesPerToken: Int) {
        let labels = [("model", model), ("kv_type", type)]
        registry.makeGauge(name: "hearth_model_kv_cache_bytes", labels: labels, help: "Bytes this model's KV cache holds allocated (all slots), by KV type.")
            .set(to: Double(bytes))
        registry.makeGauge(
            name: "hearth_model_kv_cache_bytes_per_token", labels: labels,
            help: "Bytes one token's keys and values take in this model's KV cache (every layer), by KV type.")
            .set(to: Double(bytesPerToken))
    }

    /// The prompt cache's counters last seen per model, so the Prometheus counters only grow
    /// (a model reloaded starts its own counts again from zero).
    private let promptCacheSeen = Mutex<[String: LocalPromptCacheStatistics]>([:])

    /// One local model's prompt cache (docs/PROMPT-CACHE.md): hits, misses, tokens served,
    /// evictions and disk reads, writes and refusals as counters; bytes held (memory and disk),
    /// the budget and blocks as gauges; labelled with the model.
    func recordPromptCache(_ model: String, _ now: LocalPromptCacheStatistics) {
        let labels = [("model", model)]
        let before = promptCacheSeen.withLock { seen -> LocalPromptCacheStatistics? in
            defer { seen[model] = now }
            return seen[model]
        }
        func count(_ name: String, _ help: String, _ value: KeyPath<LocalPromptCacheStatistics, Int>) {
            let previous = before.map { $0[keyPath: value] } ?? 0
            let current = now[keyPath: value]
            // A smaller value is a restarted count (the model was reloaded): all of it is new.
            let delta = current >= previous ? current - previous : current
            let counter = registry.makeCounter(name: name, labels: labels, help: help)
            if delta > 0 { counter.increment(by: Int64(delta)) }
        }
        count("hearth_prompt_cache_hits_total", "Requests whose prompt prefix came from the prompt cache (longer than any slot held).", \.hits)
        count("hearth_prompt_cache_misses_total", "Requests whose prompt was found nowhere: neither a slot nor the prompt cache held any of it.", \.misses)
        count("hearth_prompt_cache_hit_tokens_total", "Prompt tokens served from the prompt cache.", \.hitTokens)
        count("hearth_prompt_cache_evictions_total", "Prompt cache block parts evicted to stay within --cache-ram.", \.evictions)
        count("hearth_prompt_cache_evicted_bytes_total", "Bytes the prompt cache's evictions freed.", \.evictedBytes)
        count("hearth_prompt_cache_disk_reads_total", "Prompt cache blocks read back from --cache-dir (checked).", \.diskReads)
        count("hearth_prompt_cache_disk_writes_total", "Prompt cache blocks written to --cache-dir.", \.diskWrites)
        count("hearth_prompt_cache_disk_rejected_total", "Prompt cache files refused and removed: corrupt, truncated or another model's.", \.diskRejected)
        registry.makeGauge(name: "hearth_prompt_cache_bytes", labels: labels, help: "Bytes of KV rows the prompt cache holds in memory.")
            .set(to: Double(now.bytes))
        registry.makeGauge(name: "hearth_prompt_cache_budget_bytes", labels: labels, help: "The prompt cache's memory budget (--cache-ram) in bytes.")
            .set(to: Double(now.budget))
        registry.makeGauge(name: "hearth_prompt_cache_blocks", labels: labels, help: "Blocks the prompt cache holds in memory.")
            .set(to: Double(now.blocks))
        registry.makeGauge(name: "hearth_prompt_cache_disk_bytes", labels: labels, help: "Bytes the prompt cache's disk tier holds for this model.")
            .set(to: Double(now.diskBytes))
    }

    /// The text exposition format.
    func render() -> String { registry.emitToString() }
}
