/// The common face of every error tilepack throws for bad input.
///
/// Each stage has its own typed error (``TIFFError``, ``CRSError``, ``ArchiveError``, …) whose
/// `description` is one line that names the file (or value) and the problem. The CLI prints
/// that line and exits with ``exitCode``; library users can `catch` the concrete type.
public protocol TilePackError: Error, CustomStringConvertible, Sendable {
    /// Exit status the CLI uses: 2 for bad input (the house rule), 1 for environment failures.
    var exitCode: Int32 { get }
}

extension TilePackError {
    public var exitCode: Int32 { 2 }
}
