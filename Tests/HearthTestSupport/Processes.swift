import Foundation

/// Runs `executable` with `arguments` to the end; its exit status, standard output and error.
public func runProcess(_ executable: URL, _ arguments: [String]) throws -> (status: Int32, stdout: Data, stderr: Data) {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
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
