import Crypto
import Foundation
import HearthFakeServers
import HearthTestSupport
import Testing

@testable import HearthHub

#if canImport(Glibc)
import Glibc
#endif

private func sha256(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

/// The hub's loose ends (issue 55, item 9): names with control characters are refused before
/// they reach a path or a terminal; `rm` leaves other downloads' partial files and locks;
/// registry pins are checked for models already in the cache; the registry is found only
/// where docs/MODELS.md says.
@Suite(.serialized) struct HubLeftoversTests {
    // MARK: - Control characters

    @Test func controlCharactersAreNotSafeNames() {
        for bad in ["a\nb.gguf", "a\rb", "x\u{1B}[2Jy.gguf", "tab\there", "del\u{7F}", "csi\u{9B}31m", "rtl\u{202E}fdp.exe", "ls\u{2028}x"] {
            #expect(!isSafeRepoPath(bad), "\(printableName(bad))")
            #expect(containsControlCharacters(bad))
        }
        for bad in ["main\u{1B}[31m", "v1\n", "feature/\u{7}bell"] { #expect(!isSafeRevision(bad), "\(printableName(bad))") }
        #expect(isSafeRepoPath("dir/model-Q4_K_M.gguf") && isSafeRepoPath("日本語/モデル.gguf") && isSafeRevision("refs/pr/1"))
        #expect(printableName("a\nb\u{1B}c") == "a\\u{A}b\\u{1B}c")
        #expect(printableName("plain-Q4_K_M.gguf") == "plain-Q4_K_M.gguf")
        #expect(!printableName("x\u{9B}\u{202E}y").unicodeScalars.contains(where: isControlScalar))
    }

    /// A repository whose listing has a file name with a newline: the pull is refused with a
    /// typed error that shows the name escaped, and nothing is downloaded or linked.
    @Test func aListedFileNameWithControlCharactersIsRefused() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-hub-ctl-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let repoDir = root.appendingPathComponent("repo")
        try FileManager.default.createDirectory(at: repoDir, withIntermediateDirectories: true)
        try HubFixture.bytes(1000, seed: 5).write(to: repoDir.appendingPathComponent("evil\nname-Q4_K_M.gguf"))
        let hub = try await FakeHub.start(repositories: ["org/ctl-GGUF": repoDir])
        try await withCleanup({ await hub.stop() }) {
            let cache = root.appendingPathComponent("cache")
            let models = HubModels(environment: HubEnvironment(endpoint: hub.endpoint, cacheDirectory: cache), retry: RetryPolicy(attempts: 1))
            let error = await #expect(throws: HubError.self) {
                try await models.pull(ModelReference(repo: try #require(RepoID("org/ctl-GGUF")), quant: "Q4_K_M"))
            }
            #expect(error?.code == .invalidResponse)
            #expect(error?.description.contains("control characters") == true, "\(error.map { printableName($0.description) } ?? "")")
            #expect(error?.description.contains("evil\\u{A}name") == true)
            #expect(error.map { containsControlCharacters($0.description) } == false)
            #expect(!hub.requests.contains { $0.uri.contains("/resolve/") || $0.uri.hasPrefix("/cdn/") })
            let blobs = cache.appendingPathComponent("models--org--ctl-GGUF/blobs")
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: blobs.path)) ?? []).isEmpty)
        }
    }

    /// A revision, a `--file` or a quant with control characters is refused before any request,
    /// and the error shows it escaped.
    @Test func referencesWithControlCharactersAreRefusedBeforeAnyRequest() async throws {
        let fixture = try await HubFixture.start()
        try await withCleanup({ await fixture.finish() }) {
            let repo = try #require(RepoID("org/tiny-GGUF"))
            let models = fixture.models()
            let references = [
                ModelReference(repo: repo, quant: "Q8_0", revision: "main\u{1B}[31m"),
                ModelReference(repo: repo, file: "tiny-Q8_0.gguf\n"),
                ModelReference(repo: repo, quant: "Q8_0\u{1B}]0;x\u{7}"),
            ]
            for reference in references {
                for offline in [false, true] {
                    let hub = fixture.models(offline: offline)
                    let pulled = await #expect(throws: HubError.self) { try await hub.pull(reference) }
                    let resolved = await #expect(throws: HubError.self) { try await hub.resolve(reference) }
                    for error in [pulled, resolved] {
                        #expect(error?.code == .invalidReference, "\(error.map { printableName($0.description) } ?? "none")")
                        #expect(error.map { containsControlCharacters($0.description) } == false)
                    }
                }
                let removed = #expect(throws: HubError.self) { try models.remove(reference) }
                #expect(removed?.code == .invalidReference)
            }
            #expect(fixture.hub.requests.isEmpty)
        }
    }

    /// A snapshot file another tool wrote under a name with a newline is neither listed nor
    /// chosen; its blob stays as long as that file links to it.
    @Test func cachedNamesWithControlCharactersAreNotListed() async throws {
        let fixture = try await HubFixture.start()
        try await withCleanup({ await fixture.finish() }) {
            let repo = try #require(RepoID("org/tiny-GGUF"))
            let models = fixture.models()
            let q8 = try await models.pull(ModelReference(repo: repo, quant: "Q8_0"))
            let etag = try #require(models.cache.blobName(repo, commit: q8.commit, path: "tiny-Q8_0.gguf"))
            let odd = models.cache.snapshot(repo, commit: q8.commit, path: "odd\nname.gguf")
            #expect(symlink("../../blobs/\(etag)", odd.path) == 0)
            #expect(models.installed().map(\.name) == ["org/tiny-GGUF:Q8_0"])
            #expect(!models.cache.files(repo, commit: q8.commit).contains { containsControlCharacters($0) })
            #expect(models.cached(ModelReference(repo: repo, file: "odd\nname.gguf")) == nil)
            // Removing the Q8_0 model keeps the blob the odd file still links to.
            _ = try models.remove(ModelReference(repo: repo, quant: "Q8_0"))
            #expect(FileManager.default.fileExists(atPath: models.cache.blob(repo, etag: etag).path))
        }
    }

    // MARK: - rm and other downloads

    /// `rm` of a repository's last snapshot while other downloads are under way there: their
    /// partial blobs and their lock files (and so the folder) stay; an idle lock file goes.
    /// Once nothing is in progress, the next `rm` leaves nothing.
    @Test func removeKeepsOtherDownloadsInProgress() async throws {
        let fixture = try await HubFixture.start()
        try await withCleanup({ await fixture.finish() }) {
            let repo = try #require(RepoID("org/tiny-GGUF"))
            let models = fixture.models()
            let q4 = try await models.pull(ModelReference(repo: repo, quant: "Q4_K_M"))
            let repoDir = fixture.cache.appendingPathComponent(repo.folderName)
            let locks = fixture.cache.appendingPathComponent(".locks").appendingPathComponent(repo.folderName)
            let fm = FileManager.default

            // An interrupted download of Q8_0 (its partial blob and its lock file, not held)...
            let q8 = try fixture.contents("org/tiny-GGUF", "tiny-Q8_0.gguf")
            let partial = repoDir.appendingPathComponent("blobs/\(sha256(q8)).incomplete")
            try q8.prefix(50_000).write(to: partial)
            let partialLock = locks.appendingPathComponent("\(sha256(q8)).lock")
            #expect(fm.createFile(atPath: partialLock.path, contents: nil))
            // ...a download running right now (its lock held; the test holds it as that process would)...
            let running = locks.appendingPathComponent("\(String(repeating: "c", count: 64)).lock")
            let runningFD = open(running.path, O_RDWR | O_CREAT, 0o644)
            #expect(runningFD >= 0 && flock(runningFD, LOCK_EX | LOCK_NB) == 0)
            // ...and a lock file left by a finished download, held by nobody.
            let idle = locks.appendingPathComponent("\(String(repeating: "d", count: 64)).lock")
            #expect(fm.createFile(atPath: idle.path, contents: nil))

            let (removed, freed) = try models.remove(ModelReference(repo: repo))
            #expect(removed.map(\.name) == ["org/tiny-GGUF:Q4_K_M"] && freed == 3_000_000)
            #expect(!fm.fileExists(atPath: q4.path.path))
            #expect(fm.fileExists(atPath: partial.path), "a partial download was deleted")
            #expect(fm.fileExists(atPath: partialLock.path), "the lock of a partial download was deleted")
            #expect(fm.fileExists(atPath: running.path), "a held lock file was deleted")
            #expect(!fm.fileExists(atPath: idle.path), "an idle lock file was kept")
            #expect(!fm.fileExists(atPath: repoDir.appendingPathComponent("snapshots").path))
            #expect(try fm.contentsOfDirectory(atPath: repoDir.appendingPathComponent("blobs").path) == [partial.lastPathComponent])

            // The interrupted download resumes from what was kept.
            let before = fixture.hub.requests.count
            let resumed = try await models.pull(ModelReference(repo: repo, quant: "Q8_0"))
            #expect(try Data(contentsOf: resumed.path) == q8)
            #expect(fixture.hub.requests.dropFirst(before).contains { $0.headers.first(name: "range") == "bytes=50000-" })

            // The running download ends; removing the last model now removes everything.
            flock(runningFD, LOCK_UN)
            close(runningFD)
            _ = try models.remove(ModelReference(repo: repo))
            #expect(!fm.fileExists(atPath: repoDir.path), "\(fixture.cacheFiles())")
            #expect(!fm.fileExists(atPath: locks.path), "\(fixture.cacheFiles())")
        }
    }

    // MARK: - Pins of cached models

    /// Registry pins (size, sha256) are checked for a model already in the cache, not only
    /// against the hub's listing on download: a cached file that is not the pinned one is
    /// never used — offline it is an error; online the pinned file is fetched, or the pull is
    /// refused when the hub lists another.
    @Test func pinsAreCheckedForCachedModels() async throws {
        let fixture = try await HubFixture.start()
        try await withCleanup({ await fixture.finish() }) {
            let repo = try #require(RepoID("org/tiny-GGUF"))
            let reference = ModelReference(repo: repo, quant: "Q8_0")
            let content = try fixture.contents("org/tiny-GGUF", "tiny-Q8_0.gguf")
            let pinned = ExpectedFile(bytes: Int64(content.count), sha256: sha256(content))
            let pulled = try await fixture.models().pull(reference)
            let offline = fixture.models(offline: true)

            // The right pins: used from the cache, no request.
            let before = fixture.hub.requests.count
            #expect(try await fixture.models().resolve(reference, expected: pinned) == pulled)
            #expect(try await offline.pull(reference, expected: pinned) == pulled)
            #expect(fixture.hub.requests.count == before)

            // Pins the cached file does not match: offline, refused by name.
            let otherSHA = ExpectedFile(bytes: nil, sha256: String(repeating: "e", count: 64))
            let otherSize = ExpectedFile(bytes: 12345, sha256: nil)
            let sha = await #expect(throws: HubError.self) { try await offline.resolve(reference, expected: otherSHA) }
            #expect(sha?.code == .checksumMismatch && sha?.description.contains(String(repeating: "e", count: 64)) == true)
            #expect(sha?.description.contains(sha256(content)) == true)
            let size = await #expect(throws: HubError.self) { try await offline.resolve(reference, expected: otherSize) }
            #expect(size?.code == .sizeMismatch && size?.description.contains("12345") == true)
            let offlinePull = await #expect(throws: HubError.self) { try await offline.pull(reference, expected: otherSHA) }
            #expect(offlinePull?.code == .checksumMismatch)
            // Online: the hub lists the file the cache has, not the pinned one — refused.
            let online = await #expect(throws: HubError.self) { try await fixture.models().resolve(reference, expected: otherSHA) }
            #expect(online?.code == .checksumMismatch && online?.description.contains("registry pins") == true)

            // The snapshot links to another blob than the pinned one (an older download, say).
            let cache = fixture.models().cache
            let link = cache.snapshot(repo, commit: pulled.commit, path: "tiny-Q8_0.gguf")
            let stale = Data(content.reversed())
            try stale.write(to: cache.blob(repo, etag: sha256(stale)))
            try cache.link(repo, commit: pulled.commit, path: "tiny-Q8_0.gguf", etag: sha256(stale))
            let staleError = await #expect(throws: HubError.self) { try await offline.resolve(reference, expected: pinned) }
            #expect(staleError?.code == .sizeMismatch || staleError?.code == .checksumMismatch)
            #expect(staleError?.code == .checksumMismatch, "same size, other content: the sha256 pin catches it")
            // Online, the pinned file is linked again (its blob is still there: nothing to download).
            let repaired = try await fixture.models().resolve(reference, expected: pinned)
            #expect(try Data(contentsOf: repaired.path) == content)
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == "../../blobs/\(sha256(content))")

            // A plain copy in the snapshot (no blob link to vouch for it) is hashed.
            try FileManager.default.removeItem(at: link)
            try content.write(to: link)
            #expect(try await offline.resolve(reference, expected: pinned).path == link)
            var changed = content
            changed[changed.startIndex + 100] ^= 0xff
            try changed.write(to: link)
            let hashed = await #expect(throws: HubError.self) { try await offline.resolve(reference, expected: pinned) }
            #expect(hashed?.code == .checksumMismatch && hashed?.description.contains(sha256(changed)) == true)
        }
    }

    // MARK: - Where the registry is found

    /// `HEARTH_MODELS` when set; else the `models/` of the checkout the executable lies in;
    /// never the working directory (the function is not even given it), and an executable path
    /// that is not absolute (a bare `argv[0]`, which would be taken relative to the working
    /// directory) finds nothing.
    @Test func theRegistryIsFoundOnlyWhereDocumented() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-registry-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let fm = FileManager.default
        let checkout = root.appendingPathComponent("checkout")
        let binDir = checkout.appendingPathComponent(".build/x86_64-unknown-linux-gnu/debug")
        try fm.createDirectory(at: binDir, withIntermediateDirectories: true)
        try fm.createDirectory(at: checkout.appendingPathComponent("models"), withIntermediateDirectories: true)
        try Data(#"{"models": []}"#.utf8).write(to: checkout.appendingPathComponent("models/registry.json"))
        let binary = binDir.appendingPathComponent("hearth")
        try Data().write(to: binary)
        // A link to the binary elsewhere (on PATH, say) still finds the checkout's models/.
        let bin = root.appendingPathComponent("bin")
        try fm.createDirectory(at: bin, withIntermediateDirectories: true)
        try fm.createSymbolicLink(at: bin.appendingPathComponent("hearth"), withDestinationURL: binary)

        let installed = checkout.appendingPathComponent("models").resolvingSymlinksInPath().path
        #expect(ModelRegistry.directory(environment: [:], executable: binary)?.resolvingSymlinksInPath().path == installed)
        #expect(ModelRegistry.directory(environment: [:], executable: bin.appendingPathComponent("hearth"))?.resolvingSymlinksInPath().path == installed)
        #expect(ModelRegistry.directory(environment: ["HEARTH_MODELS": "/opt/models"], executable: binary)?.path == "/opt/models")
        #expect(ModelRegistry.directory(environment: ["HEARTH_MODELS": ""], executable: binary)?.resolvingSymlinksInPath().path == installed)
        #expect(ModelRegistry.directory(environment: [:], executable: URL(fileURLWithPath: "/nonexistent/bin/hearth")) == nil)
        #expect(ModelRegistry.directory(environment: [:], executable: nil) == nil)

        // Installed files stay inside the folder.
        let dir = URL(fileURLWithPath: "/m")
        #expect(ModelRegistry.installedPath("gemma.gguf", in: dir) == "/m/gemma.gguf")
        for bad in ["../etc/passwd", "/etc/passwd", "a/../../b", "", "x\n.gguf", "a//b"] {
            #expect(ModelRegistry.installedPath(bad, in: dir) == nil, "\(printableName(bad))")
        }
    }
}
