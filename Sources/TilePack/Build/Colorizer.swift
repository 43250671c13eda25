import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns resampled source samples into RGBA8 display pixels.
///
/// - `rgb`: 8-bit samples as they are; 1 band gray, 2 gray + alpha, 3 RGB, 4 RGBA (the alpha
///   band is the source's `alphaBand`, else the last of 2 or 4 bands).
/// - `palette`: the TIFF colour map (16-bit entries, top byte kept); always resampled nearest.
/// - `stretch`: each band linearly from its 2nd percentile (0) to its 98th (255).
/// - `elevation`, `bathymetry`: the metres tinted by the ``TerrainStyle``'s ramp
///   (``HypsometricTint``; absolute by default) × the ``Hillshade`` factor; `hillshade`: the
///   grey shading alone, gdaldem's bytes. Computed on a grid with a 1-pixel border so
///   neighbouring tiles see the same neighbours and meet without seams.
/// - `percent`: ``PercentRamp`` over 0…100 (fixed, not stretched per build).
/// - `classes`: the build's ``ClassPalette`` by class value (always resampled nearest).
///
/// Every single data band's values (metres for elevation and depth, negated first when the
/// decision says so) are returned beside the colours so the archive can store them.
/// Invalid (nodata / outside) pixels are transparent black.
struct Colorizer: Sendable {
    enum Mode: Sendable, Equatable {
        case rgb, palette, stretch, elevation, bathymetry, hillshade, percent, classes

        /// Metres shaded on a bordered grid.
        var isTerrain: Bool { self == .elevation || self == .bathymetry || self == .hillshade }
    }

    /// The colour mode chosen and why (for the build summary).
    let decision: ColorDecision
    let mode: Mode
    let bands: Int
    let alphaBand: Int?
    /// Data band indices rendered: 1 (gray) or 3 (RGB).
    let colorBands: [Int]
    /// Palette as RGB bytes per index.
    let palette: [UInt8]
    /// `classes`: the build's code → colour table (empty: every code `v mod 32`).
    let classPalette: ClassPalette
    /// Per colour band (lo, hi) for `stretch`.
    let stretchRange: [(lo: Float, hi: Float)]
    /// The terrain modes' ramp (nil for `hillshade` and the other modes).
    let tint: HypsometricTint?
    /// The tint in words, for the build summary.
    let tintDescription: String?
    let hillshade: Hillshade
    /// The single data band whose values are stored; nil for several data bands.
    let valueBand: Int?
    /// What the archive's `tilepack:legend` lists (ramp stops, classes seen, percent stops); may be empty.
    let legend: [LegendEntry]

    /// Grid border (pixels) the colouring needs around a tile.
    var border: Int { mode.isTerrain ? 1 : 0 }
    /// Palette and class sources must never blend indices or class codes.
    var forcesNearest: Bool { mode == .palette || mode == .classes || decision.valueKind == .class }
    /// Whether the tiles' values are stored (every single-band kind).
    var storesValues: Bool { valueBand != nil && decision.valueKind != nil }
    /// Whether parents pick one child sample per 2×2 block instead of averaging (class codes).
    var categorical: Bool { decision.valueKind == .class }

    /// `init(source:mode:terrain:)` with the tint stretched over `elevationRange` when given.
    init(source: any RasterSource, mode requested: ColorMode, elevationRange: ClosedRange<Double>?) throws {
        try self.init(source: source, mode: requested, terrain: TerrainStyle(range: elevationRange.map { .metres($0) }))
    }

    /// Resolves `auto` (see ``ColorDecision``), checks the mode fits the source and computes
    /// the statistics it needs (a decimated pass for stretch, and for the terrain modes only
    /// with colour-file percentages or `--tint-range percentile`).
    init(source: any RasterSource, mode requested: ColorMode, terrain: TerrainStyle) throws {
        let bands = source.bands
        guard bands >= 1 else { throw BuildError.colorModeUnsupported(mode: requested, reason: "source has no bands") }
        var alpha = source.alphaBand
        if let a = alpha, a < 0 || a >= bands {
            throw BuildError.colorModeUnsupported(
                mode: requested, reason: "alpha band \(a) is not one of the \(bands) bands")
        }
        if alpha == nil, bands == 2 || bands == 4, source.colorMap == nil { alpha = bands - 1 }
        let data = (0..<bands).filter { $0 != alpha }
        let type = source.sampleType
        // The single data band's valid samples, read at most once: the decision may need its
        // range and the colouring its percentiles.
        var cachedSample: SourceStatistics.SortedSample?
        func singleBandSample() throws -> SourceStatistics.SortedSample {
            if let cachedSample { return cachedSample }
            guard let band = data.first else { return SourceStatistics.SortedSample(values: []) }
            let sample = try SourceStatistics.samples(of: source, bands: [band])[0]
            cachedSample = sample
            return sample
        }
        let decision = try ColorDecision.decide(
            requested: requested, sampleType: type, bands: bands, dataBands: data, hasColorMap: source.colorMap != nil,
            hints: source.terrainHints,
            sample: {
                let s = try singleBandSample()
                return ColorDecision.BandSummary(
                    range: s.range, distinct: s.distinctIntegers(limit: ColorDecision.maxClasses))
            })
        let shown = decision.mode
        let mode: Mode
        switch decision.mode {
        case .rgb: mode = .rgb
        case .palette: mode = .palette
        case .stretch: mode = .stretch
        case .elevation: mode = .elevation
        case .bathymetry: mode = .bathymetry
        case .hillshade: mode = .hillshade
        case .percent: mode = .percent
        case .classes: mode = .classes
        case .auto: preconditionFailure("ColorDecision.decide resolves auto")
        }
        if (mode == .percent || mode == .classes), data.count != 1 {
            throw BuildError.colorModeUnsupported(
                mode: shown, reason: "needs a single data band, source has \(data.count)")
        }
        var legend: [LegendEntry] = []
        var colorBands: [Int]
        switch data.count {
        case 1, 2: colorBands = [data[0]]
        default: colorBands = Array(data.prefix(3))
        }
        if data.count == 2 && !mode.isTerrain && mode != .palette && mode != .percent && mode != .classes {
            throw BuildError.colorModeUnsupported(
                mode: shown, reason: "2 colour bands without alpha cannot be shown as gray or RGB")
        }
        var palette: [UInt8] = []
        var classPalette = ClassPalette(codes: [])
        var stretch: [(lo: Float, hi: Float)] = []
        var tint: HypsometricTint?, tintDescription: String?
        switch mode {
        case .rgb:
            guard type == .uint8 else {
                throw BuildError.colorModeUnsupported(
                    mode: shown, reason: "needs 8-bit samples, source is \(type.rawValue); use stretch")
            }
        case .palette:
            guard let map = source.colorMap, !map.isEmpty, map.count % 3 == 0, bands == 1 else {
                throw BuildError.colorModeUnsupported(
                    mode: shown, reason: "needs a 1-band source with a colour map of 3·n entries")
            }
            let n = map.count / 3
            palette = [UInt8](repeating: 0, count: n * 3)
            for i in 0..<n {
                palette[i * 3] = UInt8(map[i] >> 8)
                palette[i * 3 + 1] = UInt8(map[n + i] >> 8)
                palette[i * 3 + 2] = UInt8(map[2 * n + i] >> 8)
            }
            colorBands = [0]
        case .stretch:
            let p =
                colorBands.count == 1 && colorBands.first == data.first
                ? [try singleBandSample()].map { s in s.values.isEmpty ? nil : [2.0, 98].map { s.percentile($0) ?? 0 } }
                : try SourceStatistics.percentiles(of: source, bands: colorBands, [2, 98])
            stretch = p.map { v in
                guard let v, v[1] > v[0] else { return (v?[0] ?? 0, (v?[0] ?? 0) + 1) }
                return (v[0], v[1])
            }
        case .elevation, .bathymetry, .hillshade:
            guard data.count == 1 else {
                throw BuildError.colorModeUnsupported(
                    mode: shown, reason: "needs a single elevation band, source has \(data.count)")
            }
            if mode != .hillshade {
                // Only a colour file with percentages or `--tint-range percentile` reads the
                // source's statistics: the default tint is a function of metres alone. Positive
                // depths are negated before colouring, so their statistics are too.
                let sign: Double = decision.negated ? -1 : 1
                let resolved = try terrain.resolve(
                    bathymetry: mode == .bathymetry,
                    valueRange: {
                        try singleBandSample().range.map { r in
                            let a = sign * Double(r.lowerBound), b = sign * Double(r.upperBound)
                            return min(a, b)...max(a, b)
                        }
                    },
                    percentiles: { () throws -> (Double, Double)? in
                        let s = try singleBandSample()
                        guard let lo = s.percentile(decision.negated ? 99 : 1),
                            let hi = s.percentile(decision.negated ? 1 : 99)
                        else { return nil }
                        return (sign * Double(lo), sign * Double(hi))
                    })
                tint = resolved.tint
                tintDescription = resolved.description
                legend = resolved.tint.legend
            }
        case .percent:
            legend = PercentRamp.legend
        case .classes:
            classPalette = ClassPalette(
                codes: try singleBandSample().distinctIntegers(limit: ColorDecision.maxClasses) ?? [])
            legend = classPalette.legend
        }
        if mode == .palette, decision.valueKind == .class,
            let indices = try singleBandSample().distinctIntegers(limit: 256)
        {
            legend = indices.compactMap { v in
                guard v >= 0, v < Float(palette.count / 3) else { return nil }
                let i = Int(v)
                return LegendEntry(
                    value: Double(v), label: "class \(ColorDecision.number(v))",
                    rgba: [palette[i * 3], palette[i * 3 + 1], palette[i * 3 + 2], 255])
            }
        }
        self.decision = decision
        self.mode = mode
        self.bands = bands
        self.alphaBand = alpha
        self.colorBands = colorBands
        self.palette = palette
        self.classPalette = classPalette
        self.stretchRange = stretch
        self.tint = tint
        self.tintDescription = tintDescription
        self.hillshade = terrain.hillshade
        self.valueBand = data.count == 1 ? data.first : nil
        self.legend = legend
    }

    /// Colours the interior (grid minus ``border``) of a resampled grid into `rgba`
    /// (256·256·4 bytes for a tile); for a single data band also returns the interior values
    /// (metres for elevation and depth; NaN where invalid).
    func colorize(values given: [Float], valid: [UInt8], grid: MapFrame, into rgba: inout [UInt8]) -> [Float]? {
        let b = border, w = grid.width - 2 * b, h = grid.height - 2 * b
        precondition(rgba.count == w * h * 4 && given.count == grid.width * grid.height * bands)
        var values = given
        if decision.negated, let band = valueBand {
            // Positive depths: negative metres from here on (colour and stored values alike).
            for k in stride(from: band, to: values.count, by: bands) { values[k] = -values[k] }
        }
        if mode.isTerrain {
            return hillshade.render(
                values: values, stride: bands, band: colorBands[0], valid: valid, grid: grid, tint: tint, into: &rgba)
        }
        if mode == .rgb {
            colorizeRGB(values: values, valid: valid, grid: grid, into: &rgba)
            return storedValues(values, valid: valid, grid: grid)
        }
        for j in 0..<h {
            for i in 0..<w {
                let k = j * grid.width + i, o = (j * w + i) * 4
                guard valid[k] != 0 else { rgba[o] = 0; rgba[o + 1] = 0; rgba[o + 2] = 0; rgba[o + 3] = 0; continue }
                let px = k * bands
                var r: Float, g: Float, bl: Float, a: Float = 255
                switch mode {
                case .palette:
                    // Range-check in Float: a wild sample must not trap in Int conversion.
                    let v = values[px].rounded()
                    guard v >= 0, v < Float(palette.count / 3) else {
                        rgba[o] = 0; rgba[o + 1] = 0; rgba[o + 2] = 0; rgba[o + 3] = 0; continue
                    }
                    let idx = Int(v)
                    r = Float(palette[idx * 3]); g = Float(palette[idx * 3 + 1]); bl = Float(palette[idx * 3 + 2])
                case .classes:
                    guard let c = classPalette.color(values[px + colorBands[0]]) else {
                        rgba[o] = 0; rgba[o + 1] = 0; rgba[o + 2] = 0; rgba[o + 3] = 0; continue
                    }
                    r = Float(c.0); g = Float(c.1); bl = Float(c.2)
                case .percent:
                    (r, g, bl) = PercentRamp.color(values[px + colorBands[0]])
                case .stretch:
                    func s(_ slot: Int) -> Float {
                        let (lo, hi) = stretchRange[slot]
                        return (values[px + colorBands[slot]] - lo) / (hi - lo) * 255
                    }
                    r = s(0)
                    if colorBands.count == 3 { g = s(1); bl = s(2) } else { g = r; bl = r }
                default:
                    r = values[px + colorBands[0]]
                    if colorBands.count == 3 {
                        g = values[px + colorBands[1]]; bl = values[px + colorBands[2]]
                    } else {
                        g = r; bl = r
                    }
                }
                if let ab = alphaBand, mode != .palette { a = values[px + ab] }
                rgba[o] = Self.byte(r); rgba[o + 1] = Self.byte(g); rgba[o + 2] = Self.byte(bl);
                rgba[o + 3] = Self.byte(a)
            }
        }
        return storedValues(values, valid: valid, grid: grid)
    }

    /// The interior's values of the single data band (NaN where invalid), nil when the
    /// source has several data bands. O(pixels).
    private func storedValues(_ values: [Float], valid: [UInt8], grid: MapFrame) -> [Float]? {
        guard storesValues, let band = valueBand else { return nil }
        let b = border, w = grid.width - 2 * b, h = grid.height - 2 * b
        var out = [Float](repeating: .nan, count: w * h)
        for j in 0..<h {
            for i in 0..<w {
                let k = (j + b) * grid.width + i + b
                if valid[k] != 0 { out[j * w + i] = values[k * bands + band] }
            }
        }
        return out
    }

    /// The `rgb` mode on unsafe buffers (the samples are already 0…255): the bulk of an
    /// RGB build's colouring. Same bytes as the general loop.
    private func colorizeRGB(values: [Float], valid: [UInt8], grid: MapFrame, into rgba: inout [UInt8]) {
        let w = grid.width, h = grid.height, bands = bands
        let r = colorBands[0], g = colorBands.count == 3 ? colorBands[1] : r,
            bl = colorBands.count == 3 ? colorBands[2] : r
        let alpha = alphaBand ?? -1
        values.withUnsafeBufferPointer { v in
            valid.withUnsafeBufferPointer { ok in
                rgba.withUnsafeMutableBufferPointer { out in
                    precondition(v.count >= w * h * bands && ok.count >= w * h && out.count >= w * h * 4)
                    if bands == 3, r == 0, g == 1, bl == 2, alpha < 0 {
                        // Plain RGB (the common source): fixed offsets, one 32-bit store a pixel.
                        Self.opaqueRGB(v, valid: ok, count: w * h, into: out)
                        return
                    }
                    for k in 0..<(w * h) {
                        let o = k * 4
                        guard ok[k] != 0 else { out[o] = 0; out[o + 1] = 0; out[o + 2] = 0; out[o + 3] = 0; continue }
                        let px = k * bands
                        out[o] = Self.byte(v[px + r])
                        out[o + 1] = Self.byte(v[px + g])
                        out[o + 2] = Self.byte(v[px + bl])
                        out[o + 3] = alpha >= 0 ? Self.byte(v[px + alpha]) : 255
                    }
                }
            }
        }
    }

    /// Three bands a pixel as opaque RGBA (transparent black where invalid): the general
    /// loop's bytes with the band offsets fixed, ``byte(_:)`` in Double (fewer instructions,
    /// same rounding) and each pixel stored as one little-endian `UInt32`.
    /// - Cost: O(count), no allocation.
    static func opaqueRGB(
        _ v: UnsafeBufferPointer<Float>, valid ok: UnsafeBufferPointer<UInt8>, count: Int,
        into out: UnsafeMutableBufferPointer<UInt8>
    ) {
        precondition(v.count >= count * 3 && ok.count >= count && out.count >= count * 4)
        guard count > 0, let base = out.baseAddress else { return }
        let raw = UnsafeMutableRawPointer(base)
        @inline(__always) func b(_ x: Float) -> UInt32 {
            // Not NaN, clamped: floor(x + 0.5) in Double is exact, so it is `byte`'s rounding.
            guard x == x else { return 0 }
            return UInt32(truncatingIfNeeded: Int(Double(min(max(x, 0), 255)) + 0.5))
        }
        for k in 0..<count {
            let px = k * 3
            let word: UInt32 = ok[k] == 0 ? 0 : b(v[px]) | b(v[px + 1]) << 8 | b(v[px + 2]) << 16 | 0xFF00_0000
            raw.storeBytes(of: word.littleEndian, toByteOffset: k * 4, as: UInt32.self)
        }
    }

    /// `v` clamped to 0…255 and rounded half away from zero (NaN → 0). Truncation plus the
    /// exact fraction instead of `rounded()`: x86-64's baseline has no rounding instruction,
    /// so `rounded()` is a libm call per sample.
    @inline(__always)
    static func byte(_ v: Float) -> UInt8 {
        guard !v.isNaN else { return 0 }
        let c = min(max(v, 0), 255)
        let whole = Int(c)
        return UInt8(whole + (c - Float(whole) >= 0.5 ? 1 : 0))
    }
}
