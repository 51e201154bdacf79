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

    /// One finished generation request by what served it, labelled `model` (the name the
    /// client asked for), `provider` (`local` or the cloud provider that answered; `none` when
    /// nothing did), `route` (the API endpoint) and `finish_reason` (`stop`, `length`,
    /// `tool_calls`…; `error` for a failed request): the request count, its tokens, and its time
    /// to first token — so a gateway's cloud routes and local models each have their own series.
    func recordServed(
        model: String, provider: String, route: String, finishReason: String, promptTokens: Int, generatedTokens: Int,
        timeToFirstToken: Double?
    ) {
        let served = [("model", model), ("provider", provider)]
        registry.makeCounter(
            name: "hearth_served_requests_total", labels: served + [("route", route), ("finish_reason", finishReason)],
            help: "Generation requests by model, provider, route and finish reason (error: the request failed)."
        ).increment()
        if promptTokens > 0 {
            registry.makeCounter(name: "hearth_served_prompt_tokens_total", labels: served, help: "Prompt tokens by model and provider.")
                .increment(by: Int64(promptTokens))
        }
        if generatedTokens > 0 {
            registry.makeCounter(name: "hearth_served_generation_tokens_total", labels: served, help: "Generated tokens by model and provider.")
                .increment(by: Int64(generatedTokens))
        }
        if let timeToFirstToken {
            registry.makeValueHistogram(
                name: "hearth_served_time_to_first_token_seconds", labels: served, buckets: Self.firstTokenBuckets,
                help: "Seconds from admitting a request to its first generated token, by model and provider."
            ).record(timeToFirstToken)
        }
    }

    /// Buckets of the time-to-first-token histograms.
    static let firstTokenBuckets: [Double] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    /// A local request's time from admission to the start of its prompt: waiting for its turn
    /// among the slots (the fair queue), tokenizing, compiling its schema.
    func recordQueueTime(model: String, seconds: Double) {
        registry.makeValueHistogram(
            name: "hearth_queue_time_seconds", labels: [("model", model)], buckets: Self.firstTokenBuckets,
            help: "Seconds from admitting a local request to the start of its prompt (waiting for a slot, tokenizing, compiling its schema), by model."
        ).record(seconds)
    }

    /// A gateway request that moved from one provider to the next (`reason`: the failure kind).
    func countFailover(from: String, to: String, reason: String) {
        registry.makeCounter(
            name: "hearth_failovers_total", labels: [("from", from), ("to", to), ("reason", reason)],
            help: "Requests the gateway moved from one provider to the next, by the failure that moved them."
        ).increment()
    }

    /// A request answered from the gateway's response cache.
    func countResponseCacheHit(model: String) {
        registry.makeCounter(
            name: "hearth_response_cache_hits_total", labels: [("model", model)],
            help: "Requests answered from the gateway's response cache, by model."
        ).increment()
    }

    /// `hearth_build_info`: 1, labelled with the version, the build's git description and the
    /// kernel level (as vLLM's and Prometheus' own build_info series).
    func recordBuildInfo(_ labels: [(String, String)]) {
        guard !labels.isEmpty else { return }
        registry.makeGauge(name: "hearth_build_info", labels: labels, help: "1, labelled with the build's version, commit and kernel level.")
            .set(to: 1)
    }

    /// `process_resident_memory_bytes` (Prometheus' process collector name), read at each scrape.
    func recordResidentMemory() {
        guard let bytes = Self.residentBytes() else { return }
        registry.makeGauge(name: "process_resident_memory_bytes", help: "Resident memory of the server process in bytes.")
            .set(to: Double(bytes))
    }

    /// The process's resident set: `/proc/self/statm`'s second field times the page size (Linux);
    /// nil where that file does not exist.
    static func residentBytes() -> Int? {
        #if os(Linux)
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
        #else
        return nil
        #endif
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

    /// The step counts last seen per model (counters only grow; a reloaded model counts anew).
    private let stepsSeen = Mutex<[String: [Int]]>([:])

    /// One local model's scheduler steps: forward steps, the sequences they held (busy slots
    /// summed over steps) and their tokens, as counters — `rate(…sequences…) / rate(…steps…)` is
    /// the batch's occupancy (llama-server's `n_busy_slots_per_decode`).
    func recordSteps(_ model: String, _ totals: (steps: Int, sequences: Int, tokens: Int)) {
        let now = [totals.steps, totals.sequences, totals.tokens]
        let before = stepsSeen.withLock { seen -> [Int]? in
            defer { seen[model] = now }
            return seen[model]
        }
        let series = [
            ("hearth_model_steps_total", "Forward steps of this model's scheduler (each a batched pass)."),
            ("hearth_model_step_sequences_total", "Sequences the steps held, summed over steps: divided by steps, the batch's occupancy (busy slots per step)."),
            ("hearth_model_step_tokens_total", "Tokens the steps processed (prompt chunks, decode tokens, drafts), summed over steps."),
        ]
        for (index, (name, help)) in series.enumerated() {
            let previous = before?[index] ?? 0
            // A smaller value is a restarted count (the model was reloaded): all of it is new.
            let delta = now[index] >= previous ? now[index] - previous : now[index]
            let counter = registry.makeCounter(name: name, labels: [("model", model)], help: help)
            if delta > 0 { counter.increment(by: Int64(delta)) }
        }
    }

    /// The text exposition format.
    func render() -> String { registry.emitToString() }
}
