import TilePackCore

/// How the terrain modes (`--color elevation`, `bathymetry`, `hillshade`) draw metres: which
/// ramp (`--tint`), over which metres (`--tint-range`), and the light (`--hillshade-*`).
/// The default is absolute: ``HypsometricTint/absolute`` as it is (``HypsometricTint/bathymetry``
/// for `--color bathymetry`), so colour depends on metres and slope only.
public struct TerrainStyle: Sendable, Equatable {
    /// The ramp; nil = the mode's default (absolute, or bathymetry for `--color bathymetry`).
    public var tint: TintChoice?
    /// Where the ramp is stretched to; nil = its own metres (absolute).
    public var range: TintRange?
    public var hillshade = Hillshade()

    public init(tint: TintChoice? = nil, range: TintRange? = nil, hillshade: Hillshade = Hillshade()) {
        self.tint = tint
        self.range = range
        self.hillshade = hillshade
    }

    /// The ramp a build in `mode` draws with and how the summary names it. `valueRange` gives
    /// the source's lowest…highest valid sample (colour-file percentages) and `percentiles`
    /// its 1st and 99th percentiles (`--tint-range percentile`); each is called only when needed.
    func resolve(
        bathymetry: Bool, valueRange: () throws -> ClosedRange<Double>?,
        percentiles: () throws -> (Double, Double)?
    ) rethrows -> (tint: HypsometricTint, description: String) {
        let choice = tint ?? (bathymetry ? .bathymetry : .absolute)
        var ramp: HypsometricTint
        var name: String
        switch choice {
        case let .file(file):
            ramp = file.tint(valueRange: file.usesPercentages ? try valueRange() : nil)
            name = "colour file \(file.path)"
        default:
            ramp = choice.preset ?? .absolute
            name = "\(choice.name) ramp"
        }
        switch range {
        case nil:
            return (ramp, "\(name) \(Self.span(ramp.extent))")
        case let .metres(r):
            return (ramp.stretched(over: r), "\(name) stretched over \(Self.span(r)) (--tint-range)")
        case .percentiles:
            guard let (lo, hi) = try percentiles() else {
                return (ramp, "\(name) \(Self.span(ramp.extent)) (no valid samples for --tint-range percentile)")
            }
            let r = lo...(hi > lo ? hi : lo + 1)
            return (ramp.stretched(over: r), "\(name) stretched over this build's 1st–99th percentiles \(Self.span(r))")
        }
    }

    /// Everything here that changes a tile's bytes, as text (a resume's identity): the
    /// tint's name and, for a file, its entries; the range; the light.
    var fingerprint: String {
        var out = "tint=\(tint?.name ?? "default")"
        if case let .file(f) = tint {
            out +=
                ";entries="
                + f.entries.map { e in
                    let level =
                        switch e.level {
                        case let .metres(m): "\(m)";
                        case let .percent(p): "\(p)%"
                        }
                    return level + ":" + e.rgba.map(String.init).joined(separator: ",")
                }.joined(separator: "|")
        }
        let h = hillshade
        return out
            + ";range=\(range?.description ?? "none");hillshade=\(h.azimuth),\(h.altitude),\(h.zFactor),\(h.multidirectional),\(h.enabled)"
    }

    static func span(_ r: ClosedRange<Double>) -> String {
        "\(HypsometricTint.metresText(r.lowerBound))…\(HypsometricTint.metresText(r.upperBound)) m"
    }
}

/// `--tint PRESET|FILE`: the ramp terrain is tinted with.
public enum TintChoice: Sendable, Equatable {
    /// ``HypsometricTint/absolute``: bathymetry and land, −11 000…8 849 m (the default).
    case absolute
    /// ``HypsometricTint/land``: the land part alone, 0…8 849 m.
    case land
    /// ``HypsometricTint/bathymetry``: the sea part alone, −11 000…−1 m.
    case bathymetry
    /// A GDAL `gdaldem color-relief` colour file.
    case file(ColorReliefFile)

    /// The preset names `--tint` takes.
    public static let presetNames = ["absolute", "land", "bathymetry"]

    /// A preset by name; nil for anything else (a file name).
    public init?(preset name: String) {
        switch name {
        case "absolute": self = .absolute
        case "land": self = .land
        case "bathymetry": self = .bathymetry
        default: return nil
        }
    }

    var preset: HypsometricTint? {
        switch self {
        case .absolute: .absolute
        case .land: .land
        case .bathymetry: .bathymetry
        case .file: nil
        }
    }

    /// The preset's name, or the file's path.
    public var name: String {
        switch self {
        case .absolute: "absolute"
        case .land: "land"
        case .bathymetry: "bathymetry"
        case let .file(f): f.path
        }
    }
}

/// `--tint-range MIN..MAX` or `--tint-range percentile`: the metres the ramp is stretched
/// over (``HypsometricTint/stretched(over:)``). `percentile` is the old per-build stretch
/// (the source's 1st…99th percentile): pieces built apart then no longer match.
public enum TintRange: Sendable, Equatable, CustomStringConvertible {
    case metres(ClosedRange<Double>)
    case percentiles

    /// Largest |MIN| or |MAX| accepted, metres.
    public static let limit = 1_000_000.0

    /// Parses `MIN..MAX` (numbers, MIN below MAX, e.g. `-2340..0`, `1200.5..2900`) or
    /// `percentile`.
    /// - Throws: ``BuildError/invalidOption(_:)`` naming `--tint-range` and the problem.
    public init(argument: String) throws(BuildError) {
        if argument == "percentile" || argument == "percentiles" { self = .percentiles; return }
        let usage = "--tint-range \(ErrorText.quoted(String(argument.prefix(60)))): "
        guard let dots = argument.firstRange(of: ".."), dots.lowerBound != argument.startIndex else {
            throw .invalidOption(usage + "expected MIN..MAX in metres (e.g. 0..3000 or -2340..0) or percentile")
        }
        let lo = argument[..<dots.lowerBound], hi = argument[dots.upperBound...]
        // Bounded far beyond Earth's ±11 km so the ramp's arithmetic stays finite.
        guard let a = Double(lo), abs(a) <= Self.limit, let b = Double(hi), abs(b) <= Self.limit else {
            throw .invalidOption(usage + "MIN and MAX must be finite numbers of metres within ±1000000")
        }
        guard a < b else {
            throw .invalidOption(
                usage + "MIN \(HypsometricTint.metresText(a)) must be below MAX \(HypsometricTint.metresText(b))")
        }
        self = .metres(a...b)
    }

    public var description: String {
        switch self {
        case let .metres(r): "\(HypsometricTint.metresText(r.lowerBound))..\(HypsometricTint.metresText(r.upperBound))"
        case .percentiles: "percentile"
        }
    }
}
