import Foundation
import HearthEngine
import HearthProviders

/// KV-cache snapshots and cache facts for clients such as the chat REPL's `/save` and `/load`.
extension LocalProvider {
    /// The generator when the model is loaded (nil before, while loading, or after a failure).
    var generatorIfLoaded: Generator? {
        lock.withLock {
            if case .loaded(let generator) = state { return generator }
            return nil
        }
    }

    /// The context window in tokens once the model is loaded, else nil.
    package var loadedContext: Int? { generatorIfLoaded?.context }

    /// Tokens the KV cache holds for the last conversation (0 before the model loads).
    package var cachedTokenCount: Int { generatorIfLoaded?.cachedTokenCount ?? 0 }

    /// A short description of the loaded model (`architecture, N layers`), or nil before loading.
    package var loadedModelSummary: String? {
        guard let generator = generatorIfLoaded else { return nil }
        let o = generator.model.options
        return "\(generator.model.architecture), \(o.layerCount) layers, \(o.hiddenSize) wide, "
            + String(format: "%.0fM parameters", Double(generator.model.parameterCount) / 1e6)
    }

    /// Why the loaded model looks like a base model and gets the dialogue prompt, or nil (not
    /// loaded, instruction-tuned, or a prompt style other than `.automatic`/`.dialogue`).
    package var dialogueReason: String? {
        guard let model = generatorIfLoaded?.model, usesDialogue(model) else { return nil }
        return model.baseModelReason ?? "--base was given"
    }

    /// The options a request with `options` would run with: each unset sampling value
    /// resolved as `parametersFor` resolves it (``Configuration/defaults``, else the model's
    /// generation_config.json, else the engine's defaults); nil before the model loads.
    /// `maxTokens` stays as given (nil: the configured default, else until the model stops or
    /// the context fills).
    package func effectiveOptions(_ options: ChatOptions) -> ChatOptions? {
        guard let generator = generatorIfLoaded else { return nil }
        let s = sampling(options, generator: generator)
        var resolved = options
        resolved.temperature = Double(s.temperature)
        resolved.topK = s.topK
        resolved.topP = Double(s.topP)
        resolved.minP = Double(s.minP)
        resolved.repetitionPenalty = Double(s.repetitionPenalty)
        resolved.seed = options.seed ?? configuration.defaults.seed
        return resolved
    }

    /// Serialises the KV cache of the current conversation (see `Generator.snapshot()`),
    /// loading the model first if needed. Waits for a running request to finish.
    /// - Throws: `ProviderError` when the model cannot be loaded.
    public func snapshot() async throws -> Data {
        let generator: Generator
        do { generator = try await loadedGenerator() } catch { throw providerError(error) }
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: generator.snapshot()) }
        }
    }

    /// Restores a snapshot made by `snapshot()` on the same model, so the next request whose
    /// prompt starts with the snapshot's tokens reuses them instead of re-processing them.
    /// - Throws: `ProviderError` (`.invalidRequest`, its underlying error an `EngineError`
    ///   with code `.invalidSnapshot`) for a corrupt or mismatched snapshot; the cache is then
    ///   unchanged and the provider usable.
    public func restore(_ data: Data) async throws {
        let generator: Generator
        do { generator = try await loadedGenerator() } catch { throw providerError(error) }
        let result: Result<Void, Error> = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: Result { try generator.restore(data) }) }
        }
        do { try result.get() } catch { throw providerError(error) }
    }
}
