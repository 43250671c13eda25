import TilePackCore

/// Why a resume or a shard merge refused its files. Each description is one line naming the
/// file and the problem, e.g.
/// `shard-1.mbtiles: built from a different source (sha256 1f0c…, shard-0.mbtiles has 9a7e…)`.
public enum ShardError: TilePackError, Equatable {
    /// The file's source (SHA-256 of the source file(s)) is not the reference's.
    case differentSource(path: String, sha256: String, expected: String, reference: String)
    /// Same source, other build options (zooms, codec, level, resampling, colour, …).
    case differentOptions(path: String, options: String, expected: String, reference: String)
    /// The file is not a shard archive (no `tilepack:shard`), or its shard record is unreadable.
    case notAShard(path: String, detail: String)
    /// Shards of builds split differently.
    case differentSplit(path: String, split: String, expected: String, reference: String)
    /// Two files are the same shard.
    case duplicateShard(path: String, shard: String, other: String)
    /// Shards not given.
    case missingShards(indices: [Int], count: Int)
    /// A shard lacks the pixels of a shard-zoom tile it owns, or they do not decode.
    case missingPixels(path: String, tile: TileID)
    /// Two shards both built one shard-zoom tile.
    case overlappingShards(path: String, tile: TileID, other: String)
    /// No shard built this planned shard-zoom tile.
    case unbuiltTile(tile: TileID, count: Int)

    public var category: TilePackErrorCategory {
        switch self {
        case .missingShards: .invalidArgument
        default: .invalidInput
        }
    }

    public var description: String {
        switch self {
        case let .differentSource(path, sha, expected, reference):
            return
                "\(path): built from a different source (sha256 \(Self.short(sha)), \(reference) has \(Self.short(expected)))"
        case let .differentOptions(path, options, expected, reference):
            return
                "\(path): built with different options (\(ErrorText.oneLine(options)); \(reference) has \(ErrorText.oneLine(expected)))"
        case let .notAShard(path, detail):
            return "\(path): not a shard archive (\(detail)); build shards with `tilepack build --shard K/N`"
        case let .differentSplit(path, split, expected, reference):
            return "\(path): shard of a different split (\(split); \(reference) is \(expected))"
        case let .duplicateShard(path, shard, other):
            return "\(path): shard \(shard) given twice (also \(other))"
        case let .missingShards(indices, count):
            let list = indices.prefix(8).map(String.init).joined(separator: ", ") + (indices.count > 8 ? ", …" : "")
            return "shard\(indices.count == 1 ? "" : "s") \(list) of \(count) missing: give all \(count) shard archives"
        case let .missingPixels(path, tile):
            return "\(path): no usable pixels for its shard-zoom tile \(tile) (damaged or incomplete shard)"
        case let .overlappingShards(path, tile, other):
            return "\(path): shard-zoom tile \(tile) was also built by \(other) (shards of different splits)"
        case let .unbuiltTile(tile, count):
            return "no shard of the \(count) built shard-zoom tile \(tile) (damaged or incomplete shard)"
        }
    }

    /// The first 12 hex digits, enough to tell files apart in a message.
    static func short(_ sha: String) -> String { sha.count > 12 ? String(sha.prefix(12)) + "…" : sha }
}
