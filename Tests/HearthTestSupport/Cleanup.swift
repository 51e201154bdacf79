/// Runs `body`, then awaits `cleanup` whether `body` returned or threw, and returns or rethrows
/// what `body` did: the `defer` an async clean-up needs. (Swift's `defer` cannot `await`, and a
/// `Task` started in one is not waited for: the next test's server could start before the
/// last one had drained.)
///
///     let harness = try await ServerHarness()
///     try await withCleanup({ try? await harness.stop() }) {
///         …
///     }
public func withCleanup<T>(
    isolation: isolated (any Actor)? = #isolation, _ cleanup: () async -> Void, _ body: () async throws -> T
) async throws -> T {
    let result: T
    do {
        result = try await body()
    } catch {
        await cleanup()
        throw error
    }
    await cleanup()
    return result
}
