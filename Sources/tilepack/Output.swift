#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes one line to stderr (error messages; stdout stays machine-readable).
func printError(_ message: String) {
    var line = Array(("error: " + message + "\n").utf8)
    // write(2) on fd 2 rather than the C `stderr` global, which Swift 6 flags as shared state.
    line.withUnsafeMutableBytes { _ = write(2, $0.baseAddress, $0.count) }
}

/// Writes progress text to stderr without a newline (stdout stays for results).
func printProgress(_ text: String) {
    var bytes = Array(text.utf8)
    bytes.withUnsafeMutableBytes { _ = write(2, $0.baseAddress, $0.count) }
}
