import TilePackCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A PMTiles archive's metadata (a JSON object) as MBTiles-style rows: a string member is
/// its own value, any other member (`vector_layers`, numbers) its JSON text. tilepack writes
/// every member as a string, so an archive converted from MBTiles and back keeps its rows.
enum PMTilesMetadata {
    /// Largest metadata accepted, stored or inflated: a tileset's JSON is kilobytes.
    static let maxBytes = 4 << 20

    /// The rows of a JSON object.
    /// - Throws: ``ArchiveError`` (`damaged`) naming `path` when the text is not a JSON object.
    /// - Cost: O(bytes).
    static func rows(_ json: [UInt8], path: String) throws(ArchiveError) -> [String: String] {
        if json.isEmpty { return [:] }
        let object: [String: JSONValue]
        do {
            object = try JSONDecoder().decode([String: JSONValue].self, from: Data(json))
        } catch {
            throw ArchiveError(path: path, code: .damaged, detail: "PMTiles metadata is not a JSON object")
        }
        var rows: [String: String] = [:]
        for (key, value) in object {
            if case .string(let s) = value {
                rows[key] = s
            } else {
                rows[key] = (try? JSONOutput.string(value)) ?? ""
            }
        }
        return rows
    }

    /// The JSON text of `rows`, keys sorted.
    /// - Cost: O(rows).
    static func json(_ rows: [String: String]) -> [UInt8] {
        // Encoding a dictionary of strings cannot fail.
        Array(((try? JSONOutput.string(rows)) ?? "{}").utf8)
    }
}
