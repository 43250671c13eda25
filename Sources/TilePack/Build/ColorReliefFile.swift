import TilePackCore

/// A GDAL `gdaldem color-relief` colour file (`--tint FILE`), the format GRASS `r.colors`,
/// ESRI `.clr` files and QGIS exports share. One entry a line:
///
///     # metres   R   G   B  [A]
///     -500       0   0 255
///     0,70,140,60
///     50%        white
///     nv         0   0   0   0
///
/// - the level: metres (within ±10 000 000), a percentage of the source's value range
///   (`0%` its lowest valid sample, `100%` its highest, as gdaldem computes them; within
///   ±1000 %), or `nv`
///   for nodata;
/// - the colour: R G B (0…255) with an optional alpha (255 when left out), or one of the
///   GRASS colour names gdaldem knows (white, black, red, green, blue, yellow, magenta, cyan,
///   aqua, grey/gray, orange, brown, purple/violet, indigo);
/// - fields separated by spaces, tabs, commas or colons; `#` starts a comment; blank lines
///   are skipped. GMT `.cpt` files are not read.
///
/// Unlike gdaldem, which skips lines it cannot read, any other line is an error naming the
/// file and line: a colour file that is half read is a map drawn wrong without a word.
/// The `nv` colour is recorded but nodata stays transparent in tiles (the map shows what is
/// under a region where it has no data).
public struct ColorReliefFile: Sendable, Equatable {
    /// Where an entry sits.
    public enum Level: Sendable, Equatable {
        case metres(Double)
        /// Percent of the source's valid sample range (0…100, may lie outside).
        case percent(Double)
    }

    public struct Entry: Sendable, Equatable {
        public var level: Level
        public var rgba: [UInt8]
    }

    /// The file as named on the command line (for messages and the build summary).
    public let path: String
    /// The colour entries in file order, `nv` excluded; at least one.
    public let entries: [Entry]
    /// The `nv` line's colour, if any.
    public let nodata: [UInt8]?

    /// Largest colour file read (a real one is a few hundred bytes).
    public static let maxBytes = 1 << 20

    /// GRASS colour names as gdaldem spells and maps them.
    static let namedColors: [String: [UInt8]] = [
        "white": [255, 255, 255], "black": [0, 0, 0], "red": [255, 0, 0], "green": [0, 255, 0], "blue": [0, 0, 255],
        "yellow": [255, 255, 0], "magenta": [255, 0, 255], "cyan": [0, 255, 255], "aqua": [0, 192, 192],
        "grey": [192, 192, 192], "gray": [192, 192, 192], "orange": [255, 192, 0], "brown": [192, 64, 0],
        "purple": [192, 0, 255], "violet": [192, 0, 255], "indigo": [0, 192, 255],
    ]

    /// Parses the file's bytes.
    /// - Throws: ``ColorReliefFileError`` naming `path` and the first bad line.
    /// - Cost: one pass over the bytes.
    public init(bytes: [UInt8], path: String) throws(ColorReliefFileError) {
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ColorReliefFileError(path: path, line: nil, problem: "not UTF-8 text")
        }
        var entries: [Entry] = [], nodata: [UInt8]?
        var lineNumber = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            let line = rawLine.prefix { $0 != "#" }
            let fields = line.split { $0 == " " || $0 == "\t" || $0 == "," || $0 == ":" || $0 == "\r" }
            if fields.isEmpty { continue }
            func bad(_ problem: String) -> ColorReliefFileError {
                ColorReliefFileError(path: path, line: lineNumber, problem: problem)
            }
            let rgba: [UInt8]
            switch fields.count {
            case 2:
                guard let named = Self.namedColors[fields[1].lowercased()] else {
                    throw bad(
                        """
                        colour \(ErrorText.quoted(String(fields[1].prefix(40)))) is not R G B [A] nor a colour \
                        name gdaldem knows
                        """
                    )
                }
                rgba = named + [255]
            case 4, 5:
                var channels: [UInt8] = []
                for (name, field) in zip(["red", "green", "blue", "alpha"], fields.dropFirst()) {
                    guard let v = UInt8(field) else {
                        throw bad("\(name) \(ErrorText.quoted(String(field.prefix(40)))) is not an integer 0…255")
                    }
                    channels.append(v)
                }
                rgba = channels.count == 3 ? channels + [255] : channels
            default:
                throw bad(
                    "expected \"elevation R G B [A]\" (or \"elevation colourname\"), found \(fields.count) fields")
            }
            let level = fields[0]
            if level.lowercased() == "nv" {
                nodata = rgba
            } else if level.hasSuffix("%") {
                // Bounded so that placing it on any finite value range stays finite.
                guard let p = Double(level.dropLast()), abs(p) <= 1000 else {
                    throw bad(
                        "percentage \(ErrorText.quoted(String(level.prefix(40)))) is not a number within -1000…1000")
                }
                entries.append(Entry(level: .percent(p), rgba: rgba))
            } else {
                // Bounded (far beyond Earth's ±11 km) so stretching the ramp stays finite.
                guard let m = Double(level), abs(m) <= 1e7 else {
                    throw bad(
                        """
                        elevation \(ErrorText.quoted(String(level.prefix(40)))) is not a number within ±10000000 \
                        m, a percentage or nv
                        """
                    )
                }
                entries.append(Entry(level: .metres(m), rgba: rgba))
            }
        }
        guard !entries.isEmpty else {
            throw ColorReliefFileError(path: path, line: nil, problem: "has no colour entries")
        }
        self.path = path
        self.entries = entries
        self.nodata = nodata
    }

    /// True when an entry is a percentage, so the ramp needs the source's value range.
    public var usesPercentages: Bool {
        entries.contains { if case .percent = $0.level { true } else { false } }
    }

    /// The ramp, percentages placed on `valueRange` (the source's lowest…highest valid
    /// sample; nil, e.g. a source without valid samples, reads them as 0…100).
    public func tint(valueRange: ClosedRange<Double>?) -> HypsometricTint {
        let lo = valueRange?.lowerBound ?? 0, hi = valueRange?.upperBound ?? 100
        let stops = entries.map { e -> HypsometricTint.Stop in
            let m: Double
            switch e.level {
            case let .metres(v): m = v
            case let .percent(p): m = lo + p / 100 * (hi - lo)
            }
            return HypsometricTint.Stop(m, e.rgba[0], e.rgba[1], e.rgba[2], e.rgba[3])
        }
        // Non-empty with finite metres: entries are checked finite and the range is finite.
        return HypsometricTint(stops: stops) ?? .absolute
    }
}

/// A colour file (`--tint FILE`) that cannot be read: `subject` is "--tint PATH:LINE" (no
/// line for the file as a whole), `detail` the problem; one line.
public struct ColorReliefFileError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The file cannot be read or used (the only code today).
        public static let unusable = Code("unusable")
    }

    public let code: Code
    /// "--tint PATH" or "--tint PATH:LINE" (1-based).
    public let subject: String
    public let detail: String
    public var cause: (any Error)? { nil }

    /// `line` is 1-based, nil for the file as a whole.
    public init(path: String, line: Int?, problem: String) {
        self.code = .unusable
        self.subject = "--tint \(path)\(line.map { ":\($0)" } ?? "")"
        self.detail = problem
    }

    public var category: TilePackErrorCategory { .invalidArgument }
}
