import TilePackCore
import TilePackGeoTIFF

/// The colour mode a build uses and why, as the build summary prints it:
/// `colour: elevation (single-band uint16 with VerticalUnitsGeoKey metre)`.
///
/// `ColorMode.auto` decides from what the source carries, first match wins:
///
/// | source | mode |
/// |---|---|
/// | a colour map | `palette` |
/// | several data bands | `rgb` when uint8, else `stretch` |
/// | one data band with a terrain signal: a vertical GeoKey (4096, 4098, 4099), a GDAL band UNITTYPE that is a length, or a band DESCRIPTION naming elevation, height, altitude, terrain, DEM, DTM or DSM | `elevation` |
/// | one uint8 band | `rgb` (grey image) |
/// | one float or signed-integer band | `elevation` |
/// | one unsigned band (16 bits or more) whose valid samples lie within Earth's elevations (−500…9000 m) and are not all within 0…255 | `elevation` |
/// | anything else | `stretch` |
///
/// AREA_OR_POINT and the other GDAL dataset items are no signal. The sample range comes from
/// the decimated statistics pass (``SourceStatistics``) the colouring needs anyway.
public struct ColorDecision: Sendable, Equatable, CustomStringConvertible {
    /// The mode used; never `.auto`.
    public let mode: ColorMode
    /// Why, in words: "as requested", or the signal `auto` went by.
    public let reason: String

    public init(mode: ColorMode, reason: String) {
        self.mode = mode
        self.reason = reason
    }

    /// `elevation (single-band int16, values 312…4807 within Earth's elevation range)`.
    public var description: String { "\(mode.rawValue) (\(reason))" }

    /// Elevations (metres) a real DEM's samples lie within: the Dead Sea shore is −430 m,
    /// Everest 8849 m.
    public static let earthElevations: ClosedRange<Float> = -500...9000

    /// Decides the mode for `requested`. `validRange` gives the smallest and largest valid
    /// sample of the single data band (nil when it has none); it is called only when the
    /// decision needs it.
    static func decide(requested: ColorMode, sampleType type: SampleType, bands: Int, dataBands: [Int], hasColorMap: Bool,
                       hints: TerrainHints, validRange: () throws -> ClosedRange<Float>?) rethrows -> ColorDecision {
        guard requested == .auto else { return ColorDecision(mode: requested, reason: "as requested") }
        if hasColorMap { return ColorDecision(mode: .palette, reason: "the source has a colour map") }
        guard dataBands.count == 1, let band = dataBands.first else {
            if type == .uint8 { return ColorDecision(mode: .rgb, reason: "\(bands) bands uint8 (\(layoutName(bands)))") }
            return ColorDecision(mode: .stretch, reason: "\(bands) bands \(type.rawValue), not 8-bit")
        }
        let signals = terrainSignals(hints, band: band)
        if !signals.isEmpty {
            return ColorDecision(mode: .elevation, reason: "single-band \(type.rawValue) with \(signals.joined(separator: ", "))")
        }
        if type == .uint8 { return ColorDecision(mode: .rgb, reason: "single-band uint8 looks like a grey image") }
        let range = try validRange()
        let values = range.map { "values \(number($0.lowerBound))…\(number($0.upperBound))" }
        let plausible = range.map { earthElevations.contains($0.lowerBound) && earthElevations.contains($0.upperBound) } ?? false
        if type.isFloat || type.isSignedInteger {
            let kind = type.isFloat ? "floating-point samples" : "signed samples"
            guard let values else { return ColorDecision(mode: .elevation, reason: "single-band \(type.rawValue), \(kind)") }
            if plausible {
                return ColorDecision(mode: .elevation, reason: "single-band \(type.rawValue), \(values) within Earth's elevation range")
            }
            return ColorDecision(mode: .elevation, reason: "single-band \(type.rawValue), \(kind), \(values)")
        }
        guard let range, let values else {
            return ColorDecision(mode: .stretch, reason: "single-band \(type.rawValue) without valid samples")
        }
        if range.lowerBound >= 0, range.upperBound <= 255 {
            return ColorDecision(mode: .stretch, reason: "single-band \(type.rawValue), \(values) look like a 0–255 image")
        }
        if plausible {
            return ColorDecision(mode: .elevation, reason: "single-band \(type.rawValue), \(values) within Earth's elevation range")
        }
        return ColorDecision(mode: .stretch, reason: "single-band \(type.rawValue), \(values) beyond Earth's elevations "
            + "(\(number(earthElevations.lowerBound))…\(number(earthElevations.upperBound)) m)")
    }

    /// The terrain signals among `hints` for data band `band`, in words.
    static func terrainSignals(_ hints: TerrainHints, band: Int) -> [String] {
        var out: [String] = []
        if let cs = hints.verticalCSType { out.append("VerticalCSTypeGeoKey \(cs == 32767 ? "user-defined" : String(cs))") }
        if let datum = hints.verticalDatum { out.append("VerticalDatumGeoKey \(datum == 32767 ? "user-defined" : String(datum))") }
        if let units = hints.verticalUnits { out.append("VerticalUnitsGeoKey \(unitName(units))") }
        if let unit = hints.unitTypes[band], lengthUnits.contains(unit.lowercased()) { out.append("UNITTYPE \(unit)") }
        if let text = hints.descriptions[band], describesTerrain(text) { out.append("DESCRIPTION \"\(text)\"") }
        return out
    }

    /// GDAL UNITTYPE spellings of a length (a band in kelvin or percent is no DEM).
    static let lengthUnits: Set<String> = [
        "m", "metre", "meter", "metres", "meters", "km", "ft", "foot", "feet", "us-ft", "us survey foot", "ftus",
    ]

    /// Words in a band description that name heights. Whole words only ("dem" is not "demand").
    static let terrainWords: Set<String> = [
        "elevation", "elevations", "height", "heights", "altitude", "altitudes", "terrain", "dem", "dtm", "dsm",
        "topography", "bathymetry",
    ]

    static func describesTerrain(_ text: String) -> Bool {
        text.lowercased().split { !$0.isLetter }.contains { terrainWords.contains(String($0)) }
    }

    /// EPSG unit codes as words.
    static func unitName(_ code: UInt16) -> String {
        switch code {
        case 9001: "metre"
        case 9002: "foot"
        case 9003: "US survey foot"
        case 9036: "kilometre"
        case 32767: "user-defined"
        default: "EPSG unit \(code)"
        }
    }

    static func layoutName(_ bands: Int) -> String {
        switch bands {
        case 1: "grey"
        case 2: "grey + alpha"
        case 3: "RGB"
        case 4: "RGBA"
        default: "first 3 as RGB"
        }
    }

    /// A sample as people write it: integers without a fraction, others to 0.01.
    static func number(_ v: Float) -> String {
        guard v.isFinite, abs(v) < 1e12 else { return "\(v)" }
        if v.rounded() == v { return String(Int64(v)) }
        let hundredths = Int64((Double(v) * 100).rounded())
        let whole = hundredths / 100, frac = abs(hundredths % 100)
        let sign = hundredths < 0 && whole == 0 ? "-" : ""
        return "\(sign)\(whole).\(frac < 10 ? "0" : "")\(frac)"
    }
}
