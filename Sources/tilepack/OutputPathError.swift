import TilePack

/// An output path the command cannot write to before any work starts: its directory is
/// missing or is not a directory. `description` is `OUT/X.MBTILES: directory OUT does not exist`,
/// exit 2 (missing input, as a missing source is), rather than SQLite's "unable to open
/// database file" after the work is done.
struct OutputPathError: TilePackError, Equatable {
    struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        var description: String { name }
        /// The directory the output would go in does not exist.
        static let missingDirectory = Code("missingDirectory")
        /// The path's directory part names something that is not a directory.
        static let notADirectory = Code("notADirectory")
    }

    let code: Code
    /// The output path as given.
    let subject: String
    let detail: String
    var cause: (any Error)? { nil }
    var category: TilePackErrorCategory { .notFound }

    init(_ code: Code, path: String, detail: String) {
        self.code = code
        self.subject = path
        self.detail = detail
    }
}
