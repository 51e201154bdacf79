import Crypto
import Foundation
import HearthFakeServers
import HearthTestSupport
import Testing

@testable import HearthHub

private func sha256(_ data: Data) -> String { SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined() }

/// `hearth pull`'s client against a fake hub that speaks the real hub's HTTP (loopback).
@Suite(.serialized) struct HubPullTests {
    @Test func pullsTheQuantIntoTheSharedCacheLayout() async throws {
        let fixture = try await HubFixture.start()
        try await withCleanup({ await fixture.finish() }) {
            let repo = try #require(RepoID("org/tiny-GGUF"))
            let model = try await fixture.models(token: HubFixture.token).pull(ModelReference(repo: repo, quant: "q4_k_m"))
            let expected = try fixture.contents("org/tiny-GGUF", "tiny-Q4_K_M.gguf")
            let commit = try #require(fixture.hub.repository("org/tiny-GGUF")?.commit)
            #expect(model.commit == commit)
            #expect(model.format == .gguf && model.files == ["tiny-Q4_K_M.gguf"] && model.quant == "Q4_K_M")
            // snapshots/{commit}/{file} → ../../blobs/{sha256}, refs/main → commit.
            let repoDir = fixture.cache.appendingPathComponent("models--org--tiny-GGUF")
            let link = repoDir.appendingPathComponent("snapshots/\(commit)/tiny-Q4_K_M.gguf")
            #expect(model.path == link)
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == "../../blobs/\(sha256(expected))")
            #expect(try Data(contentsOf: link) == expected)
            #expect(try String(contentsOf: repoDir.appendingPathComponent("refs/main"), encoding: .utf8) == commit)
            #expect(!fixture.cacheFiles().contains { $0.hasSuffix(".incomplete") })
            #expect(!fixture.cacheFiles().contains { $0.contains("Q8_0") || $0.contains("IQ4") })
            // The token goes to the hub, never to the CDN host the file is redirected to.
            let cdn = fixture.hub.requests.filter { $0.uri.hasPrefix("/cdn/") }
            #expect(cdn.count == 1 && cdn.allSatisfy { $0.headers.first(name: "authorization") == nil })
            #expect(fixture.hub.requests.filter { $0.uri.hasPrefix("/api/") }.allSatisfy { $0.headers.first(name: "authorization") == "Bearer \(HubFixture.token)" })

            // A second pull checks the hub but downloads nothing; resolve uses the cache alone.
            let before = fixture.hub.requests.count
            _ = try await fixture.models().pull(ModelReference(repo: repo, quant: "Q4_K_M"))
            #expect(!fixture.hub.requests.dropFirst(before).contains { $0.uri.contains("/resolve/") || $0.uri.hasPrefix("/cdn/") })
            let afterPull = fixture.hub.requests.count
            let resolved = try await fixture.models().resolve(ModelReference(repo: repo, quant: "Q4_K_M"))
            #expect(resolved == model)
            #expect(fixture.hub.requests.count == afterPull)
        }
    }

    @Test func treeListingIsPagedAndSplitSetsComeWhole() async throws {
        let fixture = try await HubFixture.start(pageSize: 2)
        try await withCleanup({ await fixture.finish() }) {
            let model = try await fixture.models().pull(ModelReference(repo: try #require(RepoID("org/split-GGUF"))))
            #expect(model.files == (1...3).map { "big-Q4_K_M-0000\($0)-of-00003.gguf" })
            #expect(model.path.lastPathComponent == "big-Q4_K_M-00001-of-00003.gguf")
            #expect(fixture.hub.requests.filter { $0.uri.contains("/tree/") }.count == 2)  // 4 entries, 2 a page
            for file in model.files {
                let link = fixture.cache.appendingPathComponent("models--org--split-GGUF/snapshots/\(model.commit)/\(file)")
                #expect(try Data(contentsOf: link) == fixture.contents("org/split-GGUF", file))
            }
            #expect(!fixture.cacheFiles().contains { $0.contains("mmproj") })
        }
    }

    @Test func checkpointFollowsItsIndex() async throws {
        let fixture = try await HubFixture.start()
        try await withCleanup({ await fixture.finish() }) {
            let model = try await fixture.models().pull(ModelReference(repo: try #require(RepoID("org/tiny-checkpoint"))))
            #expect(model.format == .safetensors)
            #expect(Set(model.files) == ["config.json", "tokenizer.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"])
            #expect(model.path.lastPathComponent == model.commit)
            // A plain file's blob is named by its git blob id, as its ETag is.
            let config = try fixture.contents("org/tiny-checkpoint", "config.json")
            let link = model.path.appendingPathComponent("config.json")
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == "../../blobs/\(FakeHub.gitBlobID(config))")
            #expect(!fixture.cacheFiles().contains { $0.contains("consolidated") })
        }
    }

    @Test func droppedConnectionResumesWithRange() async throws {
        let fixture = try await HubFixture.start()
        try await withCleanup({ await fixture.finish() }) {
            var faults = FakeHub.Faults()
            faults.dropAfter["tiny-Q4_K_M.gguf"] = 1_000_000
            fixture.hub.setFaults(faults)
            let events = EventLog()
            let model = try await fixture.models(events: events).pull(ModelReference(repo: try #require(RepoID("org/tiny-GGUF")), quant: "Q4_K_M"))
            let cdn = fixture.hub.requests.filter { $0.uri.hasPrefix("/cdn/") }
            #expect(cdn.count == 2)
            // The second request resumes from what the first left on disk (at most the 1 MB sent).
            let range = try #require(cdn.last?.headers.first(name: "range"))
            let resumedAt = try #require(Int(range.dropFirst("bytes=".count).dropLast()))
            #expect(range.hasPrefix("bytes=") && range.hasSuffix("-") && resumedAt > 0 && resumedAt <= 1_000_000, "\(range)")
            #expect(try sha256(Data(contentsOf: model.path)) == sha256(fixture.contents("org/tiny-GGUF", "tiny-Q4_K_M.gguf")))
            #expect(events.all.contains { if case .retrying = $0 { return true } else { return false } })
            #expect(events.all.contains { if case .finished(_, _, "sha256") = $0 { return true } else { return false } })
        }
    }

    @Test func partialDownloadFromAnEarlierRunIsResumed() async throws {
        let fixture = try await HubFixture.start()
        try await withCleanup({ await fixture.finish() }) {
            let content = try fixture.contents("org/tiny-GGUF", "tiny-Q8_0.gguf")
            let blobs = fixture.cache.appendingPathComponent("models--org--tiny-GGUF/blobs")
            try FileManager.default.createDirectory(at: blobs, withIntermediateDirectories: true)
            try content.prefix(70_000).write(to: blobs.appendingPathComponent(sha256(content) + ".incomplete"))
            let model = try await fixture.models().pull(ModelReference(repo: try #require(RepoID("org/tiny-GGUF")), quant: "Q8_0"))
            #expect(fixture.hub.requests.filter { $0.uri.hasPrefix("/cdn/") }.map { $0.headers.first(name: "range") } == ["bytes=70000-"])
            #expect(try Data(contentsOf: model.path) == content)
        }
    }

    @Test func corruptedByteIsRefusedAndLeavesNoBlob() async throws {
        let fixture = try await HubFixture.start()
        try await withCleanup({ await fixture.finish() }) {
            var faults = FakeHub.Faults()
            faults.corrupt = ["tiny-Q4_K_M.gguf"]
            fixture.hub.setFaults(faults)
            let error = await #expect(throws: HubError.self) {
                try await fixture.models().pull(ModelReference(repo: try #require(RepoID("org/tiny-GGUF")), quant: "Q4_K_M"))
            }
            #expect(error?.code == .checksumMismatch)
            #expect(error?.description.contains("tiny-Q4_K_M.gguf") == true)
            let contents = try fixture.contents("org/tiny-GGUF", "tiny-Q4_K_M.gguf")
            #expect(error?.description.contains(sha256(contents)) == true)
            let files = fixture.cacheFiles()
            #expect(!files.contains { $0.contains("/blobs/") }, "\(files)")
            #expect(!files.contains { $0.hasSuffix("tiny-Q4_K_M.gguf") }, "\(files)")
        }
    }

    @Test func transientErrorsAreRetried() async throws {
        let fixture = try await HubFixture.start()
        try await withCleanup({ await fixture.finish() }) {
            var faults = FakeHub.Faults()
            faults.unavailable = 3  // the first three requests get 503
            fixture.hub.setFaults(faults)
            let model = try await fixture.models().pull(ModelReference(repo: try #require(RepoID("org/tiny-GGUF")), quant: "Q8_0"))
            #expect(try Data(contentsOf: model.path) == fixture.contents("org/tiny-GGUF", "tiny-Q8_0.gguf"))
            #expect(fixture.hub.requests.filter { $0.uri.contains("/revision/") }.count == 4)
        }
    }

    @Test func unauthorizedNamesHFTokenAndNeverShowsIt() async throws {
        let fixture = try await HubFixture.start()
        try await withCleanup({ await fixture.finish() }) {
            let repo = try #require(RepoID("org/gated"))
            let missing = await #expect(throws: HubError.self) { try await fixture.models().pull(ModelReference(repo: repo, quant: "Q4_K_M")) }
            #expect(missing?.code == .gated)
            #expect(missing?.description.contains("HF_TOKEN") == true)
            #expect(missing?.description.contains("gated") == true)
            let wrong = await #expect(throws: HubError.self) {
                try await fixture.models(token: "hf_wrong_secret").pull(ModelReference(repo: repo, quant: "Q4_K_M"))
            }
            #expect(wrong?.description.contains("HF_TOKEN") == true)
            #expect(wrong?.description.contains("hf_wrong_secret") == false)
            _ = try await fixture.models(token: HubFixture.token).pull(ModelReference(repo: repo, quant: "Q4_K_M"))
            #expect(String(describing: HubToken(HubFixture.token)).contains(HubFixture.token) == false)
        }
    }

    @Test func notFoundNamesRepositoryAndFile() async throws {
        let fixture = try await HubFixture.start()
        try await withCleanup({ await fixture.finish() }) {
            let missingRepo = await #expect(throws: HubError.self) {
                try await fixture.models().pull(ModelReference(repo: try #require(RepoID("org/nothing-here"))))
            }
            #expect(missingRepo?.code == .repositoryNotFound && missingRepo?.description.contains("org/nothing-here") == true)
            let missingQuant = await #expect(throws: HubError.self) {
                try await fixture.models().pull(ModelReference(repo: try #require(RepoID("org/tiny-GGUF")), quant: "Q2_K"))
            }
            #expect(missingQuant?.code == .noMatchingFile && missingQuant?.description.contains("tiny-Q8_0.gguf") == true)
            // A 404 from /resolve (the file vanished after the listing): repository and file named.
            let repo = try #require(RepoID("org/tiny-GGUF"))
            let commit = try #require(fixture.hub.repository("org/tiny-GGUF")?.commit)
            let models = fixture.models()
            let download = FileDownload(api: HubAPI(environment: models.environment), cache: models.cache, retry: models.retry, progress: { _ in })
            let gone = await #expect(throws: HubError.self) {
                try await download.fetch(repo, commit: commit, file: HubFile(path: "gone.gguf", size: 10, blobID: String(repeating: "a", count: 40), sha256: String(repeating: "b", count: 64)))
            }
            #expect(gone?.code == .fileNotFound)
            #expect(gone?.description.contains("org/tiny-GGUF") == true && gone?.description.contains("gone.gguf") == true)
        }
    }

    @Test func offlineUsesTheCacheAlone() async throws {
        let fixture = try await HubFixture.start()
        let repo = try #require(RepoID("org/tiny-checkpoint"))
        let pulled = try await fixture.models().pull(ModelReference(repo: repo))
        await fixture.hub.stop()  // nothing answers any more
        let offline = fixture.models(offline: true)
        #expect(try await offline.resolve(ModelReference(repo: repo)) == pulled)
        #expect(try await offline.pull(ModelReference(repo: repo)) == pulled)
        let error = await #expect(throws: HubError.self) {
            try await offline.resolve(ModelReference(repo: try #require(RepoID("org/tiny-GGUF")), quant: "Q4_K_M"))
        }
        #expect(error?.code == .notCached && error?.description.contains("HF_HUB_OFFLINE") == true)
        try? FileManager.default.removeItem(at: fixture.root)
    }

    @Test func removeDropsOnlyUnsharedBlobs() async throws {
        let fixture = try await HubFixture.start()
        try await withCleanup({ await fixture.finish() }) {
            let repo = try #require(RepoID("org/tiny-GGUF"))
            let models = fixture.models()
            let q4 = try await models.pull(ModelReference(repo: repo, quant: "Q4_K_M"))
            let q8 = try await models.pull(ModelReference(repo: repo, quant: "Q8_0"))
            #expect(Set(models.installed().map(\.name)) == ["org/tiny-GGUF:Q4_K_M", "org/tiny-GGUF:Q8_0"])
            let (removed, freed) = try models.remove(ModelReference(repo: repo, quant: "Q4_K_M"))
            #expect(removed.map(\.name) == ["org/tiny-GGUF:Q4_K_M"] && freed == 3_000_000)
            #expect(!FileManager.default.fileExists(atPath: q4.path.path))
            #expect(FileManager.default.fileExists(atPath: q8.path.path))
            _ = try models.remove(ModelReference(repo: repo))
            #expect(!FileManager.default.fileExists(atPath: fixture.cache.appendingPathComponent("models--org--tiny-GGUF").path))
            #expect(throws: HubError.self) { try models.remove(ModelReference(repo: repo)) }
        }
    }
}

@Suite struct HubNamingTests {
    @Test func referencesParse() throws {
        let ref = try #require(ModelReference(parsing: "hf.co/bartowski/Phi-3.5-mini-instruct-GGUF:Q4_K_M"))
        #expect(ref.repo.id == "bartowski/Phi-3.5-mini-instruct-GGUF" && ref.quant == "Q4_K_M")
        #expect(ModelReference(parsing: "models/phi.gguf")?.quant == nil)  // parses, but callers try paths first
        #expect(ModelReference(parsing: "phi3-mini") == nil)
        #expect(ModelReference(parsing: "../etc/passwd") == nil)
        #expect(ModelReference(parsing: "org/a..b") == nil)
        #expect(RepoID("org/name")?.folderName == "models--org--name")
        #expect(RepoID(folderName: "models--org--name")?.id == "org/name")
    }

    @Test func quantTagsMatchWholeWords() {
        #expect(ModelFiles.carries("Phi-3-mini-4k-instruct-q4.gguf", quant: "q4"))
        #expect(ModelFiles.carries("model-Q4_K_M.gguf", quant: "q4_k_m"))
        #expect(!ModelFiles.carries("model-Q4_K_M.gguf", quant: "Q4_K"))
        #expect(!ModelFiles.carries("model-IQ4_XS.gguf", quant: "Q4_XS"))
        #expect(ModelFiles.quantTag(in: "dir/model-Q4_K_M-00001-of-00002.gguf") == "Q4_K_M")
        #expect(ModelFiles.quantTag(in: "gemma-3-270m-q4_k_m.gguf") == "Q4_K_M")
        #expect(ModelFiles.splitPrefix("a-b-00002-of-00003.gguf")?.index == 2)
        #expect(ModelFiles.splitPrefix("a-b-2-of-3.gguf") == nil)
    }

    @Test func incompleteSplitSetsAreRefused() throws {
        let repo = try #require(RepoID("o/r"))
        #expect(throws: HubError.self) {
            try ModelFiles.select(ModelReference(repo: repo, quant: "Q4_K_M"), among: ["m-Q4_K_M-00001-of-00002.gguf"])
        }
        #expect(throws: HubError.self) {
            try ModelFiles.select(ModelReference(repo: repo, file: "../x.gguf"), among: ["x.gguf"])
        }
        #expect(throws: HubError.self) { try ModelFiles.select(ModelReference(repo: repo), among: ["a-Q8_0.gguf", "b-Q8_0.gguf"]) }
    }

    @Test func environmentFollowsHuggingFaceHub() {
        let env = HubEnvironment.current(["HOME": "/home/u", "HF_HOME": "/data/hf", "HF_HUB_OFFLINE": "yes", "HF_TOKEN": " hf_x \n", "HF_ENDPOINT": "http://mirror/"])
        #expect(env.cacheDirectory.path == "/data/hf/hub" && env.offline && env.endpoint == "http://mirror" && env.token?.value == "hf_x")
        let defaults = HubEnvironment.current(["HOME": "/home/u", "HF_TOKEN_PATH": "/nonexistent"])
        #expect(defaults.cacheDirectory.path == "/home/u/.cache/huggingface/hub" && !defaults.offline && defaults.token == nil)
        #expect(defaults.endpoint == "https://huggingface.co")
        #expect(HubEnvironment.current(["HOME": "/h", "XDG_CACHE_HOME": "/x", "HF_HUB_CACHE": "~/c"]).cacheDirectory.path == "/h/c")
        #expect(HubEnvironment.current(["HOME": "/h", "XDG_CACHE_HOME": "/x"]).cacheDirectory.path == "/x/huggingface/hub")
    }
}
