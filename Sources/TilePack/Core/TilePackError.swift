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

/// A problem with one input file that belongs to no single stage's error type: a source
/// that cannot be georeferenced or tiled, an unreadable file, an undecodable archive tile.
/// `description` is "PATH: problem", one line.
public struct InputFileError: TilePackError, Equatable {
    public let path: String
    /// The problem, without the path.
    public let problem: String

    public init(path: String, problem: String) {
        self.path = path
        self.problem = problem
    }

    public var description: String { "\(path): \(problem)" }
}
