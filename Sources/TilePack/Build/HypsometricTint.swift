import TilePackCore
import TilePackArchive

/// A colour ramp over metres: the tint of terrain (`--color elevation`) and of the seabed
/// (`--color bathymetry`). The colour of a pixel is a function of its metres only (then
/// shaded by ``Hillshade``), so two archives built from any sources, at any time, in any
/// pieces, give the same colour wherever they give the same metres.
///
/// The colour at `m` metres interpolates linearly (per channel, RGBA) between the two stops
/// around `m`; below the first stop it is the first stop's colour, above the last the last's.
///
/// ``absolute``, the default, runs from the deepest sea (Challenger Deep, −11 000 m) to
/// Everest (8 849 m) in the manner of classic shaded-relief maps (Imhof, Natural Earth):
///
/// | metres | colour | |
/// |---:|---|---|
/// | −11 000 | 8, 24, 68 | hadal trenches: dark navy |
/// | −6 000 | 20, 58, 120 | abyssal plains |
/// | −4 000 | 34, 88, 156 | |
/// | −2 000 | 60, 122, 188 | continental slope |
/// | −1 000 | 92, 152, 208 | |
/// | −200 | 138, 188, 228 | shelf edge |
/// | −50 | 168, 208, 238 | |
/// | −1 | 190, 224, 246 | the shallows |
/// | 0 | 112, 153, 89 | sea level: lowland green (the coast is a sharp change from −1 m to 0 m) |
/// | 200 | 148, 182, 106 | |
/// | 500 | 196, 207, 139 | |
/// | 1 000 | 228, 218, 160 | tan |
/// | 1 500 | 214, 189, 130 | |
/// | 2 000 | 190, 154, 105 | brown |
/// | 2 500 | 166, 128, 92 | |
/// | 3 000 | 150, 120, 104 | rock |
/// | 3 500 | 155, 146, 140 | grey |
/// | 4 500 | 205, 203, 200 | |
/// | 5 500 | 240, 240, 240 | snow |
/// | 8 849 | 255, 255, 255 | |
///
/// ``land`` is its stops from 0 m up, ``bathymetry`` its stops below 0 m; all alpha 255.
/// ``stretched(over:)`` fits a ramp to other metres (`--tint-range`).
public struct HypsometricTint: Sendable, Equatable {
    /// One stop: metres and the colour there.
    public struct Stop: Sendable, Equatable {
        public var metres: Double
        public var r: UInt8, g: UInt8, b: UInt8, a: UInt8

        public init(_ metres: Double, _ r: UInt8, _ g: UInt8, _ b: UInt8, _ a: UInt8 = 255) {
            self.metres = metres
            self.r = r; self.g = g; self.b = b; self.a = a
        }
    }

    /// The stops, metres ascending (equal metres allowed: a sharp step); at least one.
    public let stops: [Stop]

    /// Stops sorted by metres (stable, so equal metres keep the file's order). Nil when
    /// `stops` is empty or a metres value is not finite.
    public init?(stops: [Stop]) {
        guard !stops.isEmpty, stops.allSatisfy({ $0.metres.isFinite }) else { return nil }
        self.stops = stops.enumerated().sorted { ($0.element.metres, $0.offset) < ($1.element.metres, $1.offset) }.map(
            \.element)
    }

    /// The default: −11 000 m … 8 849 m, bathymetry and land (table above).
    public static let absolute = HypsometricTint(unchecked: [
        Stop(-11000, 8, 24, 68), Stop(-6000, 20, 58, 120), Stop(-4000, 34, 88, 156), Stop(-2000, 60, 122, 188),
        Stop(-1000, 92, 152, 208), Stop(-200, 138, 188, 228), Stop(-50, 168, 208, 238), Stop(-1, 190, 224, 246),
        Stop(0, 112, 153, 89), Stop(200, 148, 182, 106), Stop(500, 196, 207, 139), Stop(1000, 228, 218, 160),
        Stop(1500, 214, 189, 130), Stop(2000, 190, 154, 105), Stop(2500, 166, 128, 92), Stop(3000, 150, 120, 104),
        Stop(3500, 155, 146, 140), Stop(4500, 205, 203, 200), Stop(5500, 240, 240, 240), Stop(8849, 255, 255, 255),
    ])
    /// ``absolute``'s stops from 0 m up: land only (below 0 m stays lowland green).
    public static let land = HypsometricTint(unchecked: absolute.stops.filter { $0.metres >= 0 })
    /// ``absolute``'s stops below 0 m: the seabed (above −1 m stays the shallows' blue).
    public static let bathymetry = HypsometricTint(unchecked: absolute.stops.filter { $0.metres < 0 })

    private init(unchecked stops: [Stop]) { self.stops = stops }

    /// The lowest and highest stop's metres.
    public var extent: ClosedRange<Double> { stops[0].metres...stops[stops.count - 1].metres }

    /// The colour (R, G, B, A as 0…255 doubles) at `metres`; NaN gives the first stop's.
    /// - Cost: a binary search over the stops.
    @inline(__always)
    public func color(metres m: Double) -> (r: Double, g: Double, b: Double, a: Double) {
        let s = stops
        guard m > s[0].metres else { return Self.channels(s[0]) }
        guard m < s[s.count - 1].metres else { return Self.channels(s[s.count - 1]) }
        // The first stop above m: s[hi].metres > m >= s[hi - 1].metres, 1 ≤ hi < count.
        var lo = 0, hi = s.count - 1
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if s[mid].metres > m { hi = mid } else { lo = mid }
        }
        let a = s[hi - 1], b = s[hi]
        let span = b.metres - a.metres
        let u = span > 0 ? (m - a.metres) / span : 1
        @inline(__always) func mix(_ x: UInt8, _ y: UInt8) -> Double { Double(x) + (Double(y) - Double(x)) * u }
        return (mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b), mix(a.a, b.a))
    }

    @inline(__always)
    private static func channels(_ s: Stop) -> (r: Double, g: Double, b: Double, a: Double) {
        (Double(s.r), Double(s.g), Double(s.b), Double(s.a))
    }

    /// This ramp fitted to `range` (`--tint-range MIN..MAX`), keeping sea level where it
    /// means something:
    /// - MIN < 0 < MAX and the ramp has stops on both sides of 0 m: the stops below 0 m are
    ///   scaled onto MIN…0 and those from 0 m up onto 0…MAX (the coast stays at 0 m);
    /// - MIN ≥ 0 and the ramp has land stops (≥ 0 m): those, from their lowest to their
    ///   highest, onto MIN…MAX (`--tint-range 1200..2900` spreads greens to white there);
    /// - MAX ≤ 0 and the ramp has sea stops (< 0 m): those onto MIN…MAX (`-2340..0`);
    /// - otherwise the whole ramp onto MIN…MAX.
    /// A part with a single stop (no extent) is a flat colour.
    /// Precondition: `range` is finite with MIN < MAX (``TintRange`` checks).
    public func stretched(over range: ClosedRange<Double>) -> HypsometricTint {
        let lo = range.lowerBound, hi = range.upperBound
        let sea = stops.filter { $0.metres < 0 }, land = stops.filter { $0.metres >= 0 }
        func fit(_ part: [Stop], from: ClosedRange<Double>, to: ClosedRange<Double>) -> [Stop] {
            let span = from.upperBound - from.lowerBound
            return part.map { s in
                var t = s
                let u = span > 0 ? (s.metres - from.lowerBound) / span : 0
                t.metres = to.lowerBound + u * (to.upperBound - to.lowerBound)
                return t
            }
        }
        func reach(_ part: [Stop]) -> ClosedRange<Double> { part[0].metres...part[part.count - 1].metres }
        if lo < 0, hi > 0, let first = sea.first, !land.isEmpty {
            let top = land[land.count - 1].metres
            return HypsometricTint(
                unchecked: fit(sea, from: first.metres...0, to: lo...0)
                    + fit(land, from: 0...max(top, 0), to: 0...hi))
        }
        if lo >= 0, !land.isEmpty { return HypsometricTint(unchecked: fit(land, from: reach(land), to: range)) }
        if hi <= 0, !sea.isEmpty { return HypsometricTint(unchecked: fit(sea, from: reach(sea), to: range)) }
        return HypsometricTint(unchecked: fit(stops, from: self.extent, to: range))
    }

    /// The stops as the archive's `tilepack:legend`: one `{"value", "label", "rgba"}` per stop,
    /// the label "<metres> m".
    public var legend: [LegendEntry] {
        stops.map {
            LegendEntry(value: $0.metres, label: "\(Self.metresText($0.metres)) m", rgba: [$0.r, $0.g, $0.b, $0.a])
        }
    }

    /// Metres as people write them: whole metres without a fraction, else to 0.01 m.
    static func metresText(_ m: Double) -> String { NumberText.hundredths(m) }
}
