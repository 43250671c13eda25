import TilePackCore
import TilePackGeoTIFF
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A deterministic, plausible mountain landscape laid over the real Mont Blanc massif, for
/// sample data and benchmarks without shipping (or licensing) real elevation data.
///
/// The terrain is a continuous function of UTM zone 32N coordinates (EPSG:32632): a massif
/// envelope along the real crest (highest at Mont Blanc), ridged fractal gradient noise for
/// arêtes and couloirs, the Arve valley (Les Houches–Chamonix–Argentière) and the Italian
/// Val Veny–Courmayeur–Val Ferret valley carved as U-shaped troughs with a river in each, and
/// a few alpine lakes flattened into the slopes. Everything follows from `seed`: the same
/// seed gives bit-identical output on the same platform (noise uses only + × and floor; the
/// projection uses libm, whose last-ulp results may differ between platforms).
///
/// Cost: ``sample(easting:northing:)`` is ~2 × octaves gradient-noise evaluations (about
/// 0.5 µs at 7 octaves); construction places the lakes (a few hundred samples).
public struct SyntheticTerrain: Sendable {
    /// What covers a point.
    public enum Water: Sendable, Equatable {
        case none, river, lake
    }

    /// The terrain at one point.
    public struct Point: Sendable, Equatable {
        /// Metres above sea level, within 900…4800.
        public var elevation: Double
        public var water: Water
    }

    public let seed: UInt64
    /// Wavelength in metres of the finest noise octave; sample data sets it to ~1.5 pixels.
    public let finestWavelength: Double

    private let noise: GradientNoise
    private var lakes: [Lake]

    /// The lowest and highest elevation the terrain produces.
    public static let elevationRange: ClosedRange<Double> = 900...4800

    public init(seed: UInt64, finestWavelength: Double = 45) {
        self.seed = seed
        self.finestWavelength = max(1, finestWavelength)
        var random = Random(seed: seed)
        noise = GradientNoise(random: &random)
        lakes = []
        lakes = placeLakes(random: &random)
    }

    /// The terrain at a point given in EPSG:32632 metres.
    public func sample(easting: Double, northing: Double) -> Point {
        // Local coordinates around the sample area's centre keep noise inputs small.
        let x = easting - Self.centre.x, y = northing - Self.centre.y
        var point = landform(x, y)
        for lake in lakes {
            let dx = x - lake.x, dy = y - lake.y
            let d = (dx * dx + dy * dy).squareRoot() + 0.25 * lake.radius * noise.value(x / 150, y / 150)
            if d < lake.radius {
                point = Point(elevation: lake.level, water: .lake)
            } else if d < 1.6 * lake.radius, point.water == .none {
                let w = smoothstep(lake.radius, 1.6 * lake.radius, d)
                point.elevation = lake.level + (point.elevation - lake.level) * w
            }
        }
        // Summits approach 4800 m softly instead of being cut flat.
        if point.elevation > 4400 { point.elevation = 4400 + 400 * tanh((point.elevation - 4400) / 400) }
        point.elevation = min(max(point.elevation, Self.elevationRange.lowerBound), Self.elevationRange.upperBound)
        return point
    }

    /// Low-frequency noise in −1…1 for land-cover boundaries (snow line, forest patches),
    /// `wavelength` in metres.
    public func variation(easting: Double, northing: Double, wavelength: Double) -> Double {
        let x = easting - Self.centre.x, y = northing - Self.centre.y
        return min(1, max(-1, 1.4 * noise.value(x / wavelength + 17.3, y / wavelength - 41.9)))
    }

    // MARK: - Landform

    /// The centre of the sample area (near the Aiguille du Midi), EPSG:32632.
    static let centre = (x: 335_430.0, y: 5_080_680.0)
    /// Mont Blanc summit, EPSG:32632, relative to ``centre``.
    private static let summit = (x: 334_199.0 - centre.x, y: 5_077_667.0 - centre.y)
    /// The crest runs south-west to north-east, about 40° north of east.
    private static let crestAxis = (x: 0.766, y: 0.643)

    /// Valley floors: polylines (x, y, floor elevation), EPSG:32632.
    private static let arve: [(Double, Double, Double)] = [
        (320_000, 5_078_500, 930), (329_313, 5_084_179, 1000), (334_797, 5_087_777, 1035),
        (339_659, 5_093_909, 1250), (343_500, 5_098_500, 1420),
    ].map { ($0.0 - centre.x, $0.1 - centre.y, $0.2) }
    private static let dora: [(Double, Double, Double)] = [
        (329_500, 5_067_500, 1750), (335_195, 5_071_790, 1550), (341_130, 5_075_749, 1250),
        (348_627, 5_080_342, 1650), (352_500, 5_084_500, 1950),
    ].map { ($0.0 - centre.x, $0.1 - centre.y, $0.2) }

    private func landform(_ x: Double, _ y: Double) -> Point {
        // The envelope: the Mont Blanc crest (highest at the summit) and two lower parallel
        // ranges, the Aiguilles Rouges north-west of the Arve and the Italian ridges south-east
        // of the Val Ferret; `across` grows towards the north-west.
        let rx = x - Self.summit.x, ry = y - Self.summit.y
        let along = rx * Self.crestAxis.x + ry * Self.crestAxis.y
        let across = -rx * Self.crestAxis.y + ry * Self.crestAxis.x
        let crest = 3300 + 1500 * gaussian(along / 5500)
        let envelope =
            1450 + (crest - 1450) * gaussian(across / 3600)
            + 1450 * gaussian((across - 11_500) / 2600)
            + 1350 * gaussian((across + 12_500) / 2800)

        // Ridged multifractal noise: sharp arêtes where |noise| is near zero.
        var ridged = 0.0, amplitude = 1.0, weight = 1.0, total = 0.0
        var px = x / 4000, py = y / 4000, wavelength = 4000.0
        while wavelength >= finestWavelength {
            var n = 1 - abs(1.4 * noise.value(px, py))
            n *= n * weight
            weight = min(1, max(0, 2 * n))
            ridged += n * amplitude
            total += amplitude
            amplitude *= 0.5
            wavelength *= 0.5
            // Rotate between octaves so the lattices' axes do not line up.
            (px, py) = (2 * (0.8 * px - 0.6 * py) + 3.1, 2 * (0.6 * px + 0.8 * py) - 1.7)
        }
        ridged /= total
        let mountain = 1100 + (envelope - 1100) * (0.5 + 0.7 * ridged)

        // Valleys: meandering (domain-warped) U-shaped troughs with a river along the floor.
        let wx = x + 350 * noise.value(x / 2500 + 5.5, y / 2500 - 2.5)
        let wy = y + 350 * noise.value(x / 2500 - 7.5, y / 2500 + 9.5)
        var elevation = mountain
        var water = Water.none
        for valley in [Self.arve, Self.dora] {
            let (distance, floor) = Self.distance(wx, wy, to: valley)
            let wall = smoothstep(250, 2300, distance)
            let floorHere = floor + 6 * noise.value(x / 300, y / 300)
            let carved = floorHere + (mountain - floorHere) * wall * wall * (3 - 2 * wall)
            if carved < elevation { elevation = carved }
            if distance < 18 + 8 * noise.value(x / 200 + 1.3, y / 200) {
                elevation = floor - 3
                water = .river
            }
        }
        return Point(elevation: elevation, water: water)
    }

    /// Distance from a point to a polyline and the floor elevation interpolated at the nearest point.
    private static func distance(_ x: Double, _ y: Double, to line: [(Double, Double, Double)]) -> (Double, Double) {
        var best = Double.infinity, floor = line[0].2
        for i in 0..<(line.count - 1) {
            let (ax, ay, az) = line[i], (bx, by, bz) = line[i + 1]
            let dx = bx - ax, dy = by - ay
            let t = min(1, max(0, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)))
            let ex = ax + t * dx - x, ey = ay + t * dy - y
            let d2 = ex * ex + ey * ey
            if d2 < best {
                best = d2
                floor = az + t * (bz - az)
            }
        }
        return (best.squareRoot(), floor)
    }

    // MARK: - Lakes

    private struct Lake: Sendable {
        var x, y, radius, level: Double
    }

    /// Alpine lakes (like Lac Blanc above Chamonix): seeded candidates between 1900 and
    /// 2700 m on gentle ground, away from the valleys, their level the lowest rim point.
    private func placeLakes(random: inout Random) -> [Lake] {
        var placed: [Lake] = []
        for _ in 0..<400 where placed.count < 5 {
            let x = random.uniform(-10_500, 10_500), y = random.uniform(-10_500, 10_500)
            let radius = random.uniform(110, 300)
            let centre = landform(x, y)
            guard centre.water == .none, (1900...2700).contains(centre.elevation) else { continue }
            guard placed.allSatisfy({ ($0.x - x) * ($0.x - x) + ($0.y - y) * ($0.y - y) > 9e6 }) else { continue }
            var level = centre.elevation, highest = centre.elevation
            for k in 0..<8 {
                let a = Double(k) * .pi / 4
                let rim = landform(x + radius * cos(a), y + radius * sin(a))
                guard rim.water == .none else { level = -1; break }
                level = min(level, rim.elevation)
                highest = max(highest, rim.elevation)
            }
            // Gentle ground only: a lake on a cliff would be a step, not a lake.
            guard level > 0, highest - level < 120 else { continue }
            placed.append(Lake(x: x, y: y, radius: radius, level: level))
        }
        return placed
    }

    // MARK: - Pieces

    @inline(__always) private func gaussian(_ t: Double) -> Double { exp(-t * t) }

    /// The seeded generator behind the terrain (Core's SplitMix64: same sequence as always).
    typealias Random = SplitMix64

    /// 2-D gradient (Perlin) noise over a seeded permutation of 256 lattice hashes and eight
    /// unit gradients; output roughly −0.7…0.7.
    struct GradientNoise: Sendable {
        private let permutation: [UInt8]  // 512 entries: the permutation twice, to skip a wrap

        init(random: inout Random) {
            var p = (0...255).map { UInt8($0) }
            for i in stride(from: 255, to: 0, by: -1) {
                let j = Int(random.next() % UInt64(i + 1))
                p.swapAt(i, j)
            }
            permutation = p + p
        }

        private static let gx: [Double] = [
            1, -1, 0, 0, 0.7071067811865476, -0.7071067811865476, 0.7071067811865476, -0.7071067811865476,
        ]
        private static let gy: [Double] = [
            0, 0, 1, -1, 0.7071067811865476, 0.7071067811865476, -0.7071067811865476, -0.7071067811865476,
        ]

        @inline(__always)
        func value(_ x: Double, _ y: Double) -> Double {
            let fx0 = x.rounded(.down), fy0 = y.rounded(.down)
            let fx = x - fx0, fy = y - fy0
            let ix = Int(fx0) & 255, iy = Int(fy0) & 255
            return permutation.withUnsafeBufferPointer { p in
                @inline(__always) func corner(_ i: Int, _ j: Int, _ dx: Double, _ dy: Double) -> Double {
                    let h = Int(p[Int(p[i]) + j] & 7)
                    return Self.gx[h] * dx + Self.gy[h] * dy
                }
                let n00 = corner(ix, iy, fx, fy)
                let n10 = corner(ix + 1, iy, fx - 1, fy)
                let n01 = corner(ix, iy + 1, fx, fy - 1)
                let n11 = corner(ix + 1, iy + 1, fx - 1, fy - 1)
                let u = fx * fx * fx * (fx * (fx * 6 - 15) + 10)
                let v = fy * fy * fy * (fy * (fy * 6 - 15) + 10)
                let a = n00 + u * (n10 - n00)
                let b = n01 + u * (n11 - n01)
                return a + v * (b - a)
            }
        }
    }
}

@inline(__always)
private func smoothstep(_ edge0: Double, _ edge1: Double, _ x: Double) -> Double {
    let t = min(1, max(0, (x - edge0) / (edge1 - edge0)))
    return t * t * (3 - 2 * t)
}
