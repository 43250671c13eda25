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

/// Writes one line to stderr as it is (`warning: …`, `note: …`): not an error.
func printNotice(_ message: String) {
    var line = Array((message + "\n").utf8)
    line.withUnsafeMutableBytes { _ = write(2, $0.baseAddress, $0.count) }
}

/// Writes progress text to stderr without a newline (stdout stays for results).
func printProgress(_ text: String) {
    var bytes = Array(text.utf8)
    bytes.withUnsafeMutableBytes { _ = write(2, $0.baseAddress, $0.count) }
}

import TilePack

extension TilePackErrorCategory {
    /// The CLI's exit status for each kind: 64 (EX_USAGE) for a bad argument, 2 for bad,
    /// missing or unsupported input, 1 for the environment, 3 for a locked region (the table
    /// in `tilepack --help`, TilePackCommand's discussion; 130/143 are ``BuildInterruption``'s).
    var exitStatus: Int32 {
        switch self {
        case .invalidArgument: 64
        case .invalidInput, .unsupported, .notFound: 2
        case .environment, .budgetExhausted: 1
        case .locked: 3
        }
    }
}
