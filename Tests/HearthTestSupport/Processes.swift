import Foundation

/// Runs `executable` with `arguments` to the end; its exit status, standard output and error.
/// `environment` adds to (or, with a nil value, removes from) this process's environment.
public func runProcess(
    _ executable: URL, _ arguments: [String], environment: [String: String?] = [:], stdin: Data? = nil
) throws -> (status: Int32, stdout: Data, stderr: Data) {
    let process = Process()
    let input = stdin.map { _ in Pipe() }
    if let input { process.standardInput = input }
    process.executableURL = executable
    process.arguments = arguments
    if !environment.isEmpty {
        var merged = ProcessInfo.processInfo.environment
        for (name, value) in environment { merged[name] = value }
        process.environment = merged
    }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    if let input, let stdin {  // small inputs: they fit the pipe's buffer, so writing first cannot block
        input.fileHandleForWriting.write(stdin)
        try input.fileHandleForWriting.close()
    }
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, stdout, stderr)
}

/// The cosine of the angle between two vectors (computed in Double).
public func cosineSimilarity(_ a: [Float], _ b: [Float]) -> Double {
    var dot = 0.0, na = 0.0, nb = 0.0
    for (x, y) in zip(a, b) {
        dot += Double(x) * Double(y)
        na += Double(x) * Double(x)
        nb += Double(y) * Double(y)
    }
    return dot / (na.squareRoot() * nb.squareRoot())
}
