import TilePackCore
import TilePackGeoTIFF
import TilePackArchive

/// The colour mode a build uses, what its single data band holds (``ValueKind``) and why,
/// as the build summary prints it: `colour: elevation (single-band uint16 with VerticalUnitsGeoKey metre)`.
///
/// `ColorMode.auto` decides from what the source carries, first match wins:
///
/// | source | kind | mode |
/// |---|---|---|
/// | a colour map | class | `palette` |
/// | several data bands | – | `rgb` when uint8, else `stretch` |
/// | one data band whose DESCRIPTION names depth, bathymetry or soundings | depth | `bathymetry` (all values ≥ 0:
/// negated) |
/// | one data band with UNITTYPE `%`/percent | percent | `percent` |
/// | one integer band whose DESCRIPTION names classes (class, category, land cover, land use) with at most
/// ``maxClasses`` distinct values | class | `classes` |
/// | one data band whose DESCRIPTION names percent, concentration, fraction or cover, values within 0…100 | percent |
/// `percent` |
/// | one data band with a terrain signal (a vertical GeoKey 4096/4098/4099, UNITTYPE a length, a DESCRIPTION naming
/// elevation, height, altitude, terrain, DEM, DTM or DSM) | elevation, or depth when all values are ≤ 0 | `elevation` /
/// `bathymetry` |
/// | one integer band (not uint8) with at most ``maxClasses`` distinct values | class | `classes` |
/// | one uint8 band | – (its grey is its value: nothing stored) | `rgb` (grey image) |
/// | one float or signed band, all values ≤ 0 (some < 0) | depth | `bathymetry` |
/// | one float or signed band within Earth's elevations (−500…9000 m), or without valid samples | elevation |
/// `elevation` |
/// | one unsigned band (16 bits or more) within Earth's elevations and not all within 0…255 | elevation | `elevation` |
/// | anything else single-band | value | `stretch` |
///
/// An explicit `--color` keeps the kind the file gives, except that `elevation`/`bathymetry`
/// make it elevation/depth, `percent` percent and `classes`/`palette` class.
/// AREA_OR_POINT and the other GDAL dataset items are no signal. The sample range and distinct
/// values come from the decimated statistics pass (``SourceStatistics``) the colouring needs anyway.
public struct ColorDecision: Sendable, Equatable, CustomStringConvertible {
    /// The mode used; never `.auto`.
    public let mode: ColorMode
    /// Why, in words: "as requested", or the signal `auto` went by.
    public let reason: String
    /// What the single data band holds; nil for several data bands (nothing is stored then).
    public let valueKind: ValueKind?
    /// Whether samples are negated before colouring and storing (positive depths become
    /// negative metres).
    public let negated: Bool

    public init(mode: ColorMode, reason: String, valueKind: ValueKind? = nil, negated: Bool = false) {
        self.mode = mode
        self.reason = reason
        self.valueKind = valueKind
        self.negated = negated
    }

    /// `elevation (single-band int16, values 312…4807 within Earth's elevation range)`.
    public var description: String { "\(mode.rawValue) (\(reason))" }

    /// Elevations (metres) a real DEM's samples lie within: the Dead Sea shore is −430 m,
    /// Everest 8849 m.
    public static let earthElevations: ClosedRange<Float> = -500...9000

    /// Most distinct values an integer band may have to be taken for classes.
    public static let maxClasses = 32

    /// What the decision needs of the single data band's valid samples: their range and, when
    /// there are at most ``maxClasses`` of them, the distinct values (ascending).
    struct BandSummary: Sendable, Equatable {
        var range: ClosedRange<Float>?
        var distinct: [Float]?

        init(range: ClosedRange<Float>?, distinct: [Float]? = nil) {
            self.range = range
            self.distinct = distinct
        }
    }

    /// Decides the mode and kind for `requested`. `sample` summarises the single data band's
    /// valid samples (called at most once, only when the decision needs it).
    static func decide(
        requested: ColorMode, sampleType type: SampleType, bands: Int, dataBands: [Int], hasColorMap: Bool,
        hints: TerrainHints, sample: () throws -> BandSummary
    ) rethrows -> ColorDecision {
        guard dataBands.count == 1, let band = dataBands.first else {
            if requested != .auto { return ColorDecision(mode: requested, reason: "as requested") }
            if hasColorMap { return ColorDecision(mode: .palette, reason: "the source has a colour map") }
            if type == .uint8 {
                return ColorDecision(mode: .rgb, reason: "\(bands) bands uint8 (\(layoutName(bands)))")
            }
            return ColorDecision(mode: .stretch, reason: "\(bands) bands \(type.rawValue), not 8-bit")
        }
        if hasColorMap && (requested == .auto || requested == .palette) {
            return ColorDecision(
                mode: .palette, reason: requested == .auto ? "the source has a colour map" : "as requested",
                valueKind: .class)
        }
        let found = try classify(sampleType: type, band: band, hints: hints, sample: sample)
        guard requested == .auto else {
            let kind: ValueKind
            switch requested {
            case .elevation: kind = found.kind.isMetres ? found.kind : .elevation
            case .bathymetry: kind = .depth
            case .percent: kind = .percent
            case .classes, .palette: kind = .class
            default: kind = found.kind
            }
            return ColorDecision(
                mode: requested, reason: "as requested", valueKind: kind, negated: kind == .depth && found.negated)
        }
        let mode: ColorMode
        switch found.kind {
        case .elevation: mode = .elevation
        case .depth: mode = .bathymetry
        case .percent: mode = .percent
        case .class: mode = .classes
        case .value: mode = type == .uint8 ? .rgb : .stretch
        }
        // A grey image's pixels are its values: storing them again would double the archive.
        return ColorDecision(
            mode: mode, reason: found.reason, valueKind: mode == .rgb ? nil : found.kind, negated: found.negated)
    }

    /// What one data band holds and why (see the type's table).
    static func classify(
        sampleType type: SampleType, band: Int, hints: TerrainHints,
        sample: () throws -> BandSummary
    ) rethrows -> (kind: ValueKind, reason: String, negated: Bool) {
        let head = "single-band \(type.rawValue)"
        var cached: BandSummary?
        func summary() throws -> BandSummary {
            if let cached { return cached }
            let s = try sample()
            cached = s
            return s
        }
        func values(_ r: ClosedRange<Float>) -> String { "values \(number(r.lowerBound))…\(number(r.upperBound))" }
        let description = hints.descriptions[band]
        if let text = description, describes(text, depthWords) {
            let range = try summary().range
            // Depths written as positive numbers: stored and drawn as negative metres.
            let positive = range.map { $0.lowerBound >= 0 && $0.upperBound > 0 } ?? false
            return (
                .depth, "\(head) with DESCRIPTION \"\(text)\"" + (positive ? ", positive depths negated" : ""), positive
            )
        }
        if let unit = hints.unitTypes[band], percentUnits.contains(unit.lowercased()) {
            return (.percent, "\(head) with UNITTYPE \(unit)", false)
        }
        if let text = description, !type.isFloat, namesClasses(text), let distinct = try summary().distinct,
            !distinct.isEmpty
        {
            return (
                .class,
                """
                \(head) with DESCRIPTION \"\(text)\", \(distinct.count) distinct integer \
                value\(distinct.count == 1 ? "" : "s")
                """,
                false
            )
        }
        if let text = description, describes(text, percentWords), let r = try summary().range, r.lowerBound >= 0,
            r.upperBound <= 100
        {
            return (.percent, "\(head) with DESCRIPTION \"\(text)\", \(values(r)) within 0…100", false)
        }
        let signals = terrainSignals(hints, band: band)
        if !signals.isEmpty {
            if let r = try summary().range, r.upperBound <= 0, r.lowerBound < 0 {
                return (.depth, "\(head) with \(signals.joined(separator: ", ")), \(values(r)) all ≤ 0", false)
            }
            return (.elevation, "\(head) with \(signals.joined(separator: ", "))", false)
        }
        if !type.isFloat, type != .uint8, let distinct = try summary().distinct, !distinct.isEmpty {
            return (
                .class,
                """
                \(head), \(distinct.count) distinct integer value\(distinct.count == 1 ? "" : "s") (at most \
                \(maxClasses)): classes
                """,
                false
            )
        }
        if type == .uint8 { return (.value, "\(head) looks like a grey image", false) }
        let range = try summary().range
        let plausible =
            range.map { earthElevations.contains($0.lowerBound) && earthElevations.contains($0.upperBound) } ?? false
        let beyond =
            "beyond Earth's elevations (\(number(earthElevations.lowerBound))…\(number(earthElevations.upperBound)) m)"
        if type.isFloat || type.isSignedInteger {
            let kind = type.isFloat ? "floating-point samples" : "signed samples"
            guard let range else { return (.elevation, "\(head), \(kind)", false) }
            if range.upperBound <= 0, range.lowerBound < 0 {
                return (.depth, "\(head), \(kind), \(values(range)) all ≤ 0", false)
            }
            if plausible { return (.elevation, "\(head), \(values(range)) within Earth's elevation range", false) }
            return (.value, "\(head), \(kind), \(values(range)) \(beyond)", false)
        }
        guard let range else { return (.value, "\(head) without valid samples", false) }
        if range.lowerBound >= 0, range.upperBound <= 255 {
            return (.value, "\(head), \(values(range)) look like a 0–255 image", false)
        }
        if plausible { return (.elevation, "\(head), \(values(range)) within Earth's elevation range", false) }
        return (.value, "\(head), \(values(range)) \(beyond)", false)
    }

    /// GDAL UNITTYPE spellings of a percentage.
    static let percentUnits: Set<String> = ["%", "percent", "percentage", "pct"]
    /// Words in a band description that name a percentage (with values within 0…100).
    static let percentWords: Set<String> = [
        "percent", "percentage", "pct", "concentration", "fraction", "cover", "coverage",
    ]
    /// Words in a band description that name categories ("land cover" is classes, "tree cover" a percentage).
    static let classWords: Set<String> = [
        "class", "classes", "classification", "category", "categories", "landcover", "landuse",
    ]

    /// Whether `text` names categories: a class word, or "land cover" / "land use".
    static func namesClasses(_ text: String) -> Bool {
        let words = text.lowercased().split { !$0.isLetter }.map(String.init)
        if words.contains(where: classWords.contains) { return true }
        return zip(words, words.dropFirst()).contains { $0 == "land" && ($1 == "cover" || $1 == "use") }
    }

    /// Words in a band description that name depths below a surface.
    static let depthWords: Set<String> = ["depth", "depths", "bathymetry", "bathymetric", "sounding", "soundings"]

    /// The terrain signals among `hints` for data band `band`, in words.
    static func terrainSignals(_ hints: TerrainHints, band: Int) -> [String] {
        var out: [String] = []
        if let cs = hints.verticalCSType {
            out.append("VerticalCSTypeGeoKey \(cs == 32767 ? "user-defined" : String(cs))")
        }
        if let datum = hints.verticalDatum {
            out.append("VerticalDatumGeoKey \(datum == 32767 ? "user-defined" : String(datum))")
        }
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
        "topography",
    ]

    static func describesTerrain(_ text: String) -> Bool { describes(text, terrainWords) }

    /// Whether `text` has one of `words` as a whole word, case-insensitively.
    static func describes(_ text: String, _ words: Set<String>) -> Bool {
        text.lowercased().split { !$0.isLetter }.contains { words.contains(String($0)) }
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
    static func number(_ v: Float) -> String { NumberText.hundredths(Double(v)) }
}
