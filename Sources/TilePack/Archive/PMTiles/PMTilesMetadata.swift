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
        let object: [String: Value]
        do {
            object = try JSONDecoder().decode([String: Value].self, from: Data(json))
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

    /// Any JSON value, kept to write it back as text.
    enum Value: Codable {
        case string(String), number(Double), bool(Bool), null, array([Value]), object([String: Value])

        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if c.decodeNil() {
                self = .null
            } else if let b = try? c.decode(Bool.self) {
                self = .bool(b)
            } else if let n = try? c.decode(Double.self) {
                self = .number(n)
            } else if let s = try? c.decode(String.self) {
                self = .string(s)
            } else if let a = try? c.decode([Value].self) {
                self = .array(a)
            } else {
                self = .object(try c.decode([String: Value].self))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self {
            case .string(let s): try c.encode(s)
            case .number(let n): try c.encode(n)
            case .bool(let b): try c.encode(b)
            case .null: try c.encodeNil()
            case .array(let a): try c.encode(a)
            case .object(let o): try c.encode(o)
            }
        }
    }
}
