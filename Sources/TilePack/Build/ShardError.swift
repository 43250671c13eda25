import TilePackCore

/// Why a resume or a shard merge refused its files: `subject` is the file (empty when the
/// message is about the set of shards), `detail` the problem, e.g.
/// `shard-1.mbtiles: built from a different source (sha256 1f0c…, shard-0.mbtiles has 9a7e…)`.
/// Built with the factories named after the codes (`ShardError.notAShard(path:detail:)`).
public struct ShardError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The file's source (SHA-256 of the source file(s)) is not the reference's.
        public static let differentSource = Code("differentSource")
        /// Same source, other build options (zooms, codec, level, resampling, colour, …).
        public static let differentOptions = Code("differentOptions")
        /// The file is not a shard archive (no `tilepack:shard`), or its shard record is unreadable.
        public static let notAShard = Code("notAShard")
        /// Shards of builds split differently.
        public static let differentSplit = Code("differentSplit")
        /// Two files are the same shard.
        public static let duplicateShard = Code("duplicateShard")
        /// Shards not given.
        public static let missingShards = Code("missingShards")
        /// A shard lacks the pixels of a shard-zoom tile it owns, or they do not decode.
        public static let missingPixels = Code("missingPixels")
        /// Two shards both built one shard-zoom tile.
        public static let overlappingShards = Code("overlappingShards")
        /// No shard built this planned shard-zoom tile.
        public static let unbuiltTile = Code("unbuiltTile")
    }

    public let code: Code
    /// The value or file the message leads with, or empty when the message names it itself.
    public let subject: String
    public let detail: String
    public var cause: (any Error)? { nil }

    public init(_ code: Code, subject: String = "", detail: String) {
        self.code = code
        self.subject = subject
        self.detail = detail
    }

    public var category: TilePackErrorCategory { code == .missingShards ? .invalidArgument : .invalidInput }

    public static func differentSource(path: String, sha256: String, expected: String, reference: String) -> ShardError
    {
        ShardError(
            .differentSource, subject: path,
            detail: "built from a different source (sha256 \(short(sha256)), \(reference) has \(short(expected)))")
    }

    public static func differentOptions(
        path: String, options: String, expected: String, reference: String
    )
        -> ShardError
    {
        ShardError(
            .differentOptions, subject: path,
            detail:
                """
                built with different options (\(ErrorText.oneLine(options)); \(reference) has \
                \(ErrorText.oneLine(expected)))
                """
        )
    }

    public static func notAShard(path: String, detail: String) -> ShardError {
        ShardError(
            .notAShard, subject: path,
            detail: "not a shard archive (\(detail)); build shards with `tilepack build --shard K/N`")
    }

    public static func differentSplit(path: String, split: String, expected: String, reference: String) -> ShardError {
        ShardError(
            .differentSplit, subject: path, detail: "shard of a different split (\(split); \(reference) is \(expected))"
        )
    }

    public static func duplicateShard(path: String, shard: String, other: String) -> ShardError {
        ShardError(.duplicateShard, subject: path, detail: "shard \(shard) given twice (also \(other))")
    }

    public static func missingShards(indices: [Int], count: Int) -> ShardError {
        let list = indices.prefix(8).map(String.init).joined(separator: ", ") + (indices.count > 8 ? ", …" : "")
        return ShardError(
            .missingShards,
            detail:
                "shard\(indices.count == 1 ? "" : "s") \(list) of \(count) missing: give all \(count) shard archives")
    }

    public static func missingPixels(path: String, tile: TileID) -> ShardError {
        ShardError(
            .missingPixels, subject: path,
            detail: "no usable pixels for its shard-zoom tile \(tile) (damaged or incomplete shard)")
    }

    public static func overlappingShards(path: String, tile: TileID, other: String) -> ShardError {
        ShardError(
            .overlappingShards, subject: path,
            detail: "shard-zoom tile \(tile) was also built by \(other) (shards of different splits)")
    }

    public static func unbuiltTile(tile: TileID, count: Int) -> ShardError {
        ShardError(
            .unbuiltTile, detail: "no shard of the \(count) built shard-zoom tile \(tile) (damaged or incomplete shard)"
        )
    }

    /// The first 12 hex digits, enough to tell files apart in a message.
    static func short(_ sha: String) -> String { sha.count > 12 ? String(sha.prefix(12)) + "…" : sha }
}
