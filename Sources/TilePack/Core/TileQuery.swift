/// A bad point or zoom given to `tilepack query` (or any caller that takes a place from a
/// person). One line naming the value; the CLI shows it with the usage (exit 64).
public struct QueryInputError: TilePackError, Equatable {
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// A point, zoom or URI that is malformed or out of range (the only code today).
        public static let invalidValue = Code("invalidValue")
    }

    public let code: Code
    /// The value at fault (`zoom 30`, the URI), or empty when the message names it itself.
    public let subject: String
    public let detail: String
    public var cause: (any Error)? { nil }
    public var category: TilePackErrorCategory { .invalidArgument }

    public init(_ code: Code = .invalidValue, subject: String, detail: String) {
        self.code = code
        self.subject = subject
        self.detail = detail
    }

    /// A message that names its value itself: no separate subject.
    public init(_ message: String) { self.init(subject: "", detail: message) }
}

/// A `geo:` URI (RFC 5870): `geo:LAT,LON[,ALT][;crs=wgs84][;u=UNCERTAINTY][;other=params]`.
public struct GeoURI: Sendable, Equatable {
    public let latitude: Double
    public let longitude: Double
    public let altitude: Double?
    /// The `u=` uncertainty in metres, when given.
    public let uncertainty: Double?

    /// Whether a string looks like a geo URI (so callers can choose between parsers).
    public static func isGeoURI(_ s: String) -> Bool {
        s.lowercased().hasPrefix("geo:")
    }

    /// Parses a geo URI. Only the WGS 84 CRS exists for us: `crs=` must be `wgs84` (the
    /// RFC's default and only registered value). O(length).
    /// - Throws: ``QueryInputError`` naming the URI and what is wrong.
    public init(_ text: String) throws {
        guard Self.isGeoURI(text) else { throw QueryInputError("\"\(text)\" is not a geo: URI") }
        let body = text.dropFirst(4)
        let parts = body.split(separator: ";", omittingEmptySubsequences: false)
        let coords = parts[0].split(separator: ",", omittingEmptySubsequences: false)
        guard coords.count == 2 || coords.count == 3 else {
            throw QueryInputError("geo URI \"\(text)\" needs LAT,LON or LAT,LON,ALT")
        }
        func number(_ s: Substring, _ what: String) throws(QueryInputError) -> Double {
            // RFC 5870 numbers: optional minus, digits, optional fraction; no exponent, no '+'.
            let ok = !s.isEmpty && s.allSatisfy { $0.isASCII && ($0.isNumber || $0 == "." || $0 == "-") }
            guard ok, let v = Double(s), v.isFinite else {
                throw QueryInputError("geo URI \"\(text)\": \(what) \"\(s)\" is not a number")
            }
            return v
        }
        latitude = try number(coords[0], "latitude")
        longitude = try number(coords[1], "longitude")
        altitude = coords.count == 3 ? try number(coords[2], "altitude") : nil
        var u: Double?
        for (i, p) in parts.dropFirst().enumerated() {
            let kv = p.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = kv[0].lowercased()
            let value = kv.count == 2 ? String(kv[1]) : ""
            switch key {
            case "crs":
                guard i == 0 else { throw QueryInputError("geo URI \"\(text)\": crs must be the first parameter") }
                guard value.lowercased() == "wgs84" else {
                    throw QueryInputError("geo URI \"\(text)\": crs \"\(value)\" is not supported (only wgs84)")
                }
            case "u":
                guard let v = Double(value), v.isFinite, v >= 0 else {
                    throw QueryInputError(
                        "geo URI \"\(text)\": uncertainty u=\"\(value)\" is not a non-negative number")
                }
                u = v
            case "":
                throw QueryInputError("geo URI \"\(text)\" has an empty parameter")
            default:
                break  // Other parameters are allowed by the RFC and do not change the point.
            }
        }
        uncertainty = u
        guard (-90...90).contains(latitude) else {
            throw QueryInputError("geo URI \"\(text)\": latitude \(latitude) is outside -90…90")
        }
        guard (-180...180).contains(longitude) else {
            throw QueryInputError("geo URI \"\(text)\": longitude \(longitude) is outside -180…180")
        }
    }
}

/// Where a point falls in the web-mercator tile pyramid: the library half of
/// `tilepack query --tile-only`, so its validation is testable and shared.
///
/// Policy: latitudes beyond ±``WebMercator/maxLatitude`` (85.0511°) are rejected, not
/// clamped: the square web-mercator map stops there, and answering with the edge tile
/// would name a place the user did not ask about.
public struct TileQuery: Sendable, Equatable, Codable {
    public struct Pixel: Sendable, Equatable, Codable { public let x: Int, y: Int }

    public let lat: Double
    public let lon: Double
    public let zoom: Int
    /// XYZ tile (y grows south).
    public let tile: TileID
    /// The MBTiles/TMS row of the same tile.
    public let tmsY: Int
    /// Pixel within the 256×256 tile, from its top-left corner.
    public let pixel: Pixel

    /// `lat`, `lon`, `zoom`, `tile` {`z`, `x`, `y`}, `tms_y`, `pixel` {`x`, `y`}: the fields
    /// every `query --json` answer starts with.
    enum CodingKeys: String, CodingKey {
        case lat, lon, zoom, tile, pixel
        case tmsY = "tms_y"
    }

    /// The tile and pixel for a checked point. O(1).
    public init(lat: Double, lon: Double, zoom: Int) throws {
        guard lat.isFinite, abs(lat) <= WebMercator.maxLatitude else {
            throw QueryInputError(
                "latitude \(lat) is outside web mercator's ±\(WebMercator.maxLatitude)° (the square map stops there)")
        }
        guard lon.isFinite, (-180...180).contains(lon) else {
            throw QueryInputError("longitude \(lon) is outside -180…180")
        }
        guard (0...TileID.maxZoom).contains(zoom) else {
            throw QueryInputError("zoom \(zoom) is outside 0…\(TileID.maxZoom)")
        }
        guard let hit = WebMercator.tile(lon: lon, lat: lat, zoom: zoom) else {
            throw QueryInputError("point \(lat), \(lon) at zoom \(zoom) has no web-mercator tile")
        }
        self.lat = lat
        self.lon = lon
        self.zoom = zoom
        tile = hit.tile
        tmsY = hit.tile.tmsY
        pixel = Pixel(x: hit.pixelX, y: hit.pixelY)
    }

    /// Parses the command line's words: `LAT LON ZOOM` or `geo:LAT,LON ZOOM`.
    /// - Throws: ``QueryInputError`` naming the word that is not a number or out of range.
    public init(arguments: [String]) throws {
        let lat: Double, lon: Double, zoomText: String
        if let first = arguments.first, GeoURI.isGeoURI(first) {
            guard arguments.count == 2 else {
                throw QueryInputError("expected geo:LAT,LON ZOOM, got \(arguments.count) values")
            }
            let uri = try GeoURI(first)
            lat = uri.latitude
            lon = uri.longitude
            zoomText = arguments[1]
        } else {
            guard arguments.count == 3 else {
                throw QueryInputError("expected LAT LON ZOOM (or geo:LAT,LON ZOOM), got \(arguments.count) values")
            }
            guard let a = Double(arguments[0]), a.isFinite else {
                throw QueryInputError("latitude \"\(arguments[0])\" is not a number")
            }
            guard let b = Double(arguments[1]), b.isFinite else {
                throw QueryInputError("longitude \"\(arguments[1])\" is not a number")
            }
            lat = a
            lon = b
            zoomText = arguments[2]
        }
        guard let z = Int(zoomText) else {
            throw QueryInputError("zoom \"\(zoomText)\" is not a whole number")
        }
        try self.init(lat: lat, lon: lon, zoom: z)
    }

    /// Human-readable lines for the terminal.
    public var text: String {
        """
        point  lat \(lat) lon \(lon) zoom \(zoom)
        tile   \(tile.z)/\(tile.x)/\(tile.y) (XYZ)   \(tile.z)/\(tile.x)/\(tmsY) (TMS row, as MBTiles stores it)
        pixel  x \(pixel.x) y \(pixel.y) (of 256, from the tile's top-left)
        """
    }
}

extension TileQuery {
    /// Decodes `lat`, `lon` and `zoom` through the same checks as ``init(lat:lon:zoom:)``, so
    /// a decoded query is always a valid one (a server decodes them from requests). `tile`,
    /// `tms_y` and `pixel` are recomputed from the point, never trusted from the input.
    /// - Throws: `DecodingError.dataCorrupted` naming the bad value (zoom outside 0…24,
    ///   latitude beyond ±85.0511°, longitude outside ±180), or the decoder's own errors.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let lat = try c.decode(Double.self, forKey: .lat)
        let lon = try c.decode(Double.self, forKey: .lon)
        let zoom = try c.decode(Int.self, forKey: .zoom)
        do {
            try self.init(lat: lat, lon: lon, zoom: zoom)
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath, debugDescription: "invalid tile query: \(error)",
                    underlyingError: error))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(JSONOutput.number(lat), forKey: .lat)
        try c.encode(JSONOutput.number(lon), forKey: .lon)
        try c.encode(zoom, forKey: .zoom)
        try c.encode(tile, forKey: .tile)
        try c.encode(tmsY, forKey: .tmsY)
        try c.encode(pixel, forKey: .pixel)
    }

    /// The `--tile-only --json` answer: one line, keys sorted.
    public var json: String {
        get throws { try JSONOutput.string(self) }
    }
}
