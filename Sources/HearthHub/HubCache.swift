import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The hub cache on disk, in the layout huggingface_hub writes (its `file_download.py`):
///
/// ```
/// {cache}/models--{org}--{name}/
///     blobs/{etag}                      file contents; the etag is the sha256 of an LFS file,
///                                       the git blob id of any other
///     blobs/{etag}.incomplete           a download in progress (Hearth resumes from it)
///     snapshots/{commit}/{path}         relative symlinks to ../../blobs/{etag}
///     refs/{revision}                   the commit a branch or tag pointed to when last fetched
/// {cache}/.locks/models--{org}--{name}/{etag}.lock   held while a blob is written
/// ```
///
/// A model fetched by Python tools is used from here without a copy, and Python tools find
/// what Hearth fetched.
public struct HubCache: Sendable {
    /// The cache root.
    public let root: URL

    public init(root: URL) { self.root = root }

    /// `models--org--name`.
    public func repositoryDirectory(_ repo: RepoID) -> URL { root.appendingPathComponent(repo.folderName) }

    /// `blobs/{etag}`.
    public func blob(_ repo: RepoID, etag: String) -> URL {
        repositoryDirectory(repo).appendingPathComponent("blobs").appendingPathComponent(etag)
    }

    /// `snapshots/{commit}` or a file in it.
    public func snapshot(_ repo: RepoID, commit: String, path: String? = nil) -> URL {
        let dir = repositoryDirectory(repo).appendingPathComponent("snapshots").appendingPathComponent(commit)
        return path.map { dir.appendingPathComponent($0) } ?? dir
    }

    /// The commit `revision` stands for in the cache: itself when it is a commit id, else what
    /// `refs/{revision}` holds.
    public func commit(_ repo: RepoID, revision: String) -> String? {
        if isCommitHash(revision) { return revision }
        guard isSafeRevision(revision) else { return nil }
        let file = repositoryDirectory(repo).appendingPathComponent("refs").appendingPathComponent(revision)
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return nil }
        let commit = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return isCommitHash(commit) ? commit : nil
    }

    /// Records that `revision` points at `commit` (written to a temporary file, then renamed, so
    /// readers never see half a ref). Nothing to do when the revision is the commit.
    public func setRef(_ repo: RepoID, revision: String, commit: String) throws {
        guard revision != commit else { return }
        guard isSafeRevision(revision), isCommitHash(commit) else {
            throw HubError(.invalidResponse, "refusing to record revision '\(revision)' → '\(commit)' in the cache")
        }
        let file = repositoryDirectory(repo).appendingPathComponent("refs").appendingPathComponent(revision)
        try fileSystem("write \(file.path)") {
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            let temporary = file.deletingLastPathComponent().appendingPathComponent(".\(file.lastPathComponent).\(UInt32.random(in: 0...UInt32.max)).tmp")
            try Data(commit.utf8).write(to: temporary)
            if rename(temporary.path, file.path) != 0 {
                try? FileManager.default.removeItem(at: temporary)
                throw HubError(.fileSystem, "cannot write \(file.path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Points `snapshots/{commit}/{path}` at `blobs/{etag}` with a relative symlink, replacing
    /// whatever was there.
    public func link(_ repo: RepoID, commit: String, path: String, etag: String) throws {
        guard isSafeRepoPath(path) else { throw HubError(.invalidResponse, "unsafe file path '\(path)' in \(repo)") }
        let pointer = snapshot(repo, commit: commit, path: path)
        // From snapshots/{commit}/a/b/file up to the repository folder: 2 + (components − 1).
        let depth = path.split(separator: "/").count + 1
        let target = String(repeating: "../", count: depth) + "blobs/" + etag
        try fileSystem("link \(pointer.path)") {
            try FileManager.default.createDirectory(at: pointer.deletingLastPathComponent(), withIntermediateDirectories: true)
            unlink(pointer.path)
            if symlink(target, pointer.path) != 0 {
                throw HubError(.fileSystem, "cannot link \(pointer.path): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// The commits that have a snapshot folder.
    public func snapshots(_ repo: RepoID) -> [String] {
        let dir = repositoryDirectory(repo).appendingPathComponent("snapshots")
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter(isCommitHash).sorted()
    }

    /// Repository-relative paths of the files in a snapshot whose link resolves to a file.
    /// Names no hub listing could give Hearth (control characters, `\\`; another tool may have
    /// written them) are left out, so they are never chosen, listed or printed.
    public func files(_ repo: RepoID, commit: String) -> [String] {
        allFiles(repo, commit: commit).filter(isSafeRepoPath)
    }

    /// Every file of a snapshot whose link resolves to a file, whatever its name (for
    /// deciding which blobs are still used).
    func allFiles(_ repo: RepoID, commit: String) -> [String] {
        let dir = snapshot(repo, commit: commit)
        guard let walker = FileManager.default.enumerator(atPath: dir.path) else { return [] }
        var paths: [String] = []
        while let path = walker.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: dir.appendingPathComponent(path).path, isDirectory: &isDirectory),
                !isDirectory.boolValue
            {
                paths.append(path)
            }
        }
        return paths.sorted()
    }

    /// The refs (branch and tag names) and the commits they point to.
    public func refs(_ repo: RepoID) -> [String: String] {
        let dir = repositoryDirectory(repo).appendingPathComponent("refs")
        guard let walker = FileManager.default.enumerator(atPath: dir.path) else { return [:] }
        var refs: [String: String] = [:]
        while let name = walker.nextObject() as? String {
            if let commit = commit(repo, revision: name), commit != name { refs[name] = commit }
        }
        return refs
    }

    /// The model repositories in the cache.
    public func repositories() -> [RepoID] {
        ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []).compactMap(RepoID.init(folderName:)).sorted()
    }

    /// The blob a snapshot file links to (its last path component is the etag), or nil when
    /// the file is not a link into `blobs/`.
    public func blobName(_ repo: RepoID, commit: String, path: String) -> String? {
        let pointer = snapshot(repo, commit: commit, path: path)
        guard let destination = try? FileManager.default.destinationOfSymbolicLink(atPath: pointer.path) else { return nil }
        let name = (destination as NSString).lastPathComponent
        return FileManager.default.fileExists(atPath: blob(repo, etag: name).path) ? name : nil
    }

    /// Marks a snapshot file as used now, by its blob's access time — what huggingface_hub's
    /// `scan_cache_dir` reports as last accessed — leaving the modification time alone.
    public func touch(_ repo: RepoID, commit: String, path: String) {
        let file = snapshot(repo, commit: commit, path: path).resolvingSymlinksInPath()
        var info = stat()
        guard stat(file.path, &info) == 0 else { return }
        #if canImport(Darwin)
        let modified = info.st_mtimespec
        #else
        let modified = info.st_mtim
        #endif
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var times = [now, modified]
        _ = utimensat(AT_FDCWD, file.path, &times, 0)
    }

    /// When a snapshot file was last used (its blob's access time).
    public func lastUsed(_ repo: RepoID, commit: String, path: String) -> Date? {
        var info = stat()
        guard stat(snapshot(repo, commit: commit, path: path).path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let time = info.st_atimespec
        #else
        let time = info.st_atim
        #endif
        return Date(timeIntervalSince1970: Double(time.tv_sec) + Double(time.tv_nsec) / 1e9)
    }

    /// Removes the given files from snapshot `commit` (all files when `paths` is nil), then the
    /// snapshot if it is left empty with the refs that point to it, then every blob no snapshot
    /// links to any more, then the repository folder if nothing is left. Returns the bytes freed.
    @discardableResult
    public func remove(_ repo: RepoID, commit: String, paths: [String]? = nil) throws -> Int64 {
        let fm = FileManager.default
        let snapshotDir = snapshot(repo, commit: commit)
        try fileSystem("remove from \(snapshotDir.path)") {
            if let paths {
                for path in paths where isSafeRepoPath(path) {
                    unlink(snapshotDir.appendingPathComponent(path).path)
                    // Drop directories the removal emptied.
                    var dir = snapshotDir.appendingPathComponent(path).deletingLastPathComponent()
                    while dir.path.count > snapshotDir.path.count, (try? fm.contentsOfDirectory(atPath: dir.path))?.isEmpty == true {
                        try fm.removeItem(at: dir)
                        dir.deleteLastPathComponent()
                    }
                }
                if (try? fm.contentsOfDirectory(atPath: snapshotDir.path))?.isEmpty == true { try fm.removeItem(at: snapshotDir) }
            } else if fm.fileExists(atPath: snapshotDir.path) {
                try fm.removeItem(at: snapshotDir)
            }
            if !fm.fileExists(atPath: snapshotDir.path) {
                for (name, target) in refs(repo) where target == commit {
                    try fm.removeItem(at: repositoryDirectory(repo).appendingPathComponent("refs").appendingPathComponent(name))
                }
            }
        }
        return try collectGarbage(repo)
    }

    /// Deletes the blobs no snapshot links to (leaving downloads in progress alone), and, when
    /// no snapshot is left, the repository folder — unless another download is in progress
    /// there (`removeLeftovers(_:)`). Returns the bytes freed.
    @discardableResult
    public func collectGarbage(_ repo: RepoID) throws -> Int64 {
        let fm = FileManager.default
        var used = Set<String>()
        for commit in snapshots(repo) {
            for path in allFiles(repo, commit: commit) {
                if let name = blobName(repo, commit: commit, path: path) { used.insert(name) }
            }
        }
        var freed: Int64 = 0
        let blobs = repositoryDirectory(repo).appendingPathComponent("blobs")
        try fileSystem("clean \(blobs.path)") {
            for name in (try? fm.contentsOfDirectory(atPath: blobs.path)) ?? [] where !name.hasSuffix(".incomplete") && !used.contains(name) {
                let url = blobs.appendingPathComponent(name)
                freed += Int64((try? fm.attributesOfItem(atPath: url.path)[.size] as? Int) ?? 0)
                try fm.removeItem(at: url)
            }
            if snapshots(repo).isEmpty { removeLeftovers(repo) }
        }
        return freed
    }

    /// What is left of a repository once its last snapshot is gone. Another download may be
    /// under way in it (or interrupted, to be resumed): its `blobs/{etag}.incomplete` stays,
    /// and so does every lock file that is held, or whose blob has a partial download. Lock
    /// files nobody holds are removed (each while this process holds it, so no writer is
    /// between its lock and its file). When nothing is in progress, the repository folder and
    /// its lock folder go entirely (refs to commits no longer cached, `.no_exist/`); otherwise
    /// only the empty `snapshots/` goes, and the refs (a running download wrote its ref before
    /// it started) and the folder stay. Folders are removed with `rmdir`, so one a download has
    /// just created a file in stays.
    func removeLeftovers(_ repo: RepoID) {
        let fm = FileManager.default
        let directory = repositoryDirectory(repo)
        let blobs = directory.appendingPathComponent("blobs")
        let locks = root.appendingPathComponent(".locks").appendingPathComponent(repo.folderName)
        let partials = Set(((try? fm.contentsOfDirectory(atPath: blobs.path)) ?? []).filter { $0.hasSuffix(".incomplete") }.map { String($0.dropLast(".incomplete".count)) })
        var locksKept = 0
        for name in (try? fm.contentsOfDirectory(atPath: locks.path)) ?? [] {
            let etag = name.hasSuffix(".lock") ? String(name.dropLast(".lock".count)) : name
            if partials.contains(etag) || !Self.removeUnlessHeld(locks.appendingPathComponent(name).path) { locksKept += 1 }
        }
        rmdir(locks.path)
        if partials.isEmpty && locksKept == 0 {
            for name in (try? fm.contentsOfDirectory(atPath: directory.path)) ?? [] where name != "blobs" {
                try? fm.removeItem(at: directory.appendingPathComponent(name))
            }
        } else {
            rmdir(directory.appendingPathComponent("snapshots").path)
        }
        rmdir(blobs.path)
        rmdir(directory.path)
    }

    /// Unlinks the lock file at `path` if no process holds its lock: takes the lock without
    /// waiting, unlinks the file while holding it, then lets go. A file that cannot be opened
    /// as a lock (a link, a folder) is unlinked only if it is a link. Returns whether it is gone.
    static func removeUnlessHeld(_ path: String) -> Bool {
        let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            var info = stat()
            guard lstat(path, &info) == 0 else { return true }
            return (info.st_mode & S_IFMT) == S_IFLNK && unlink(path) == 0
        }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return false }
        defer { flock(fd, LOCK_UN) }
        return unlink(path) == 0
    }
}

/// Runs a file-system step, turning Foundation's errors into a ``HubError`` naming `what`.
func fileSystem<T>(_ what: String, _ body: () throws -> T) throws -> T {
    do { return try body() } catch let error as HubError { throw error } catch {
        throw HubError(.fileSystem, "cannot \(what): \(error.localizedDescription)")
    }
}

/// An exclusive `flock` on `.locks/models--…/{etag}.lock`, the lock huggingface_hub's
/// `WeakFileLock` takes on the same path, so Hearth and Python never write one blob at once.
final class BlobLock: Sendable {
    private let descriptor: Int32

    /// Waits for the lock (polling, so the task stays cancellable).
    init(_ cache: HubCache, _ repo: RepoID, etag: String) async throws {
        let dir = cache.root.appendingPathComponent(".locks").appendingPathComponent(repo.folderName)
        try fileSystem("create \(dir.path)") { try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true) }
        let path = dir.appendingPathComponent(etag + ".lock").path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else { throw HubError(.fileSystem, "cannot open the lock \(path): \(String(cString: strerror(errno)))") }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            do { try await Task.sleep(for: .milliseconds(200)) } catch {
                close(fd)
                throw error
            }
        }
        descriptor = fd
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
