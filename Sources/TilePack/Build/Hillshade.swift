import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Shaded relief from metres, with `gdaldem hillshade`'s semantics (`-az`, `-alt`, `-z`,
/// `-multidirectional`; Horn's gradient), computed with the real ground size of a pixel at
/// each row's latitude (web-mercator resolution × cos φ), so no `-s` scale is needed and
/// the shading of a slope does not depend on which region or zoom it is built in.
///
/// With p = ∂z/∂east and q = ∂z/∂north (metres per metre, × ``zFactor``) from Horn's 3×3
/// weights, the shade is gdaldem's
///
///     shade = max(0, sin alt − cos alt · (q · cos az + p · sin az)) / √(1 + p² + q²)
///
/// and with ``multidirectional`` gdaldem's weighted mean of the shades from azimuths 225°,
/// 270°, 315° and 360° (USGS OF 92-422), weights sin²(aspect − az), ``azimuth`` ignored.
/// `--color hillshade` writes gdaldem's byte, 1 + 254 · shade (0 is gdaldem's nodata; here
/// nodata is transparent instead); the terrain modes multiply their tint by
/// ``tintFactor(shade:)``.
public struct Hillshade: Sendable, Equatable, CustomStringConvertible {
    /// Direction the light comes from, degrees clockwise from north (gdaldem `-az`).
    public var azimuth = 315.0
    /// Height of the light above the horizon, degrees (gdaldem `-alt`).
    public var altitude = 45.0
    /// Vertical exaggeration (gdaldem `-z`).
    public var zFactor = 1.0
    /// Light from four directions (gdaldem `-multidirectional`).
    public var multidirectional = false
    /// False: no shading, the tint alone (`--no-hillshade`; every pixel shaded as flat ground).
    public var enabled = true

    public init(
        azimuth: Double = 315, altitude: Double = 45, zFactor: Double = 1, multidirectional: Bool = false,
        enabled: Bool = true
    ) {
        self.azimuth = azimuth
        self.altitude = altitude
        self.zFactor = zFactor
        self.multidirectional = multidirectional
        self.enabled = enabled
    }

    /// "azimuth 315°, altitude 45°, z 1" or "multidirectional, altitude 45°, z 1".
    public var description: String {
        guard enabled else { return "off" }
        let rest = "altitude \(Self.number(altitude))°, z \(Self.number(zFactor))"
        return multidirectional ? "multidirectional, \(rest)" : "azimuth \(Self.number(azimuth))°, \(rest)"
    }

    static func number(_ v: Double) -> String { NumberText.plain(v) }

    /// Throws for values gdaldem would draw nonsense with: azimuth not finite, altitude
    /// outside 0…90° (a sun at or below the horizon lights nothing), z not finite and > 0.
    public func validate() throws(BuildError) {
        guard azimuth.isFinite else {
            throw BuildError.invalidOption("--hillshade-azimuth \(azimuth) must be a finite number of degrees")
        }
        guard altitude > 0, altitude <= 90 else {
            throw BuildError.invalidOption("--hillshade-altitude \(altitude) must be above 0° and at most 90°")
        }
        guard zFactor.isFinite, zFactor > 0 else {
            throw BuildError.invalidOption("--z-factor \(zFactor) must be a finite number above 0")
        }
    }

    /// The light's constants, computed once per tile.
    struct Light {
        let sinAlt: Double, cosAlt: Double, sinAz: Double, cosAz: Double, z: Double, multi: Bool
        let halfRoot2 = 0.5.squareRoot()

        init(_ h: Hillshade) {
            let alt = h.altitude * .pi / 180, az = h.azimuth * .pi / 180
            sinAlt = sin(alt); cosAlt = cos(alt); sinAz = sin(az); cosAz = cos(az)
            // Disabled: every slope shades as flat ground (z 0), so the tint factor is 1.
            z = h.enabled ? h.zFactor : 0; multi = h.multidirectional
        }

        /// The shade (0…1) of a surface with gradients p = ∂z/∂east, q = ∂z/∂north (before z).
        @inline(__always)
        func shade(dzdE: Double, dzdN: Double) -> Double {
            let p = dzdE * z, q = dzdN * z
            let pq = p * p + q * q
            let norm = (1 + pq).squareRoot()
            guard multi else { return max(0, sinAlt - cosAlt * (q * cosAz + p * sinAz)) / norm }
            guard pq > 0 else { return sinAlt }
            // gdaldem's four lights; each clamped at 0 before weighting.
            let v225 = max(0, sinAlt + halfRoot2 * cosAlt * (p + q))
            let v270 = max(0, sinAlt + cosAlt * p)
            let v315 = max(0, sinAlt - halfRoot2 * cosAlt * (q - p))
            let v360 = max(0, sinAlt - cosAlt * q)
            let w225 = 0.5 * pq + p * q, w315 = 0.5 * pq - p * q
            return (w225 * v225 + p * p * v270 + w315 * v315 + q * q * v360) / (2 * pq) / norm
        }
    }

    /// gdaldem's hillshade byte for `shade`: 1 + 254 · shade, rounded (≥ 1; 0 is nodata).
    @inline(__always)
    static func grey(_ shade: Double) -> UInt8 {
        Colorizer.byte(Float(1 + 254 * max(0, shade)))
    }

    /// The factor a tint is multiplied by: 0.35 + 0.65 · shade / sin(altitude), so flat
    /// ground keeps the tint exactly, slopes facing away darken it to 35 %, slopes facing
    /// the light brighten it (clamped at 255 per channel).
    @inline(__always)
    static func tintFactor(shade: Double, sinAltitude: Double) -> Double {
        0.35 + 0.65 * shade / sinAltitude
    }

    /// Shades the interior (grid minus its 1-pixel border) of a resampled metres grid into
    /// `rgba`: grey hillshade when `tint` is nil, else tint × ``tintFactor(shade:sinAltitude:)``.
    /// Returns the interior metres (NaN where invalid). The border is why tiles meet without
    /// seams: every pixel's neighbours are real samples, whichever tile it is in. Invalid
    /// neighbours take the centre's value (flat there), like gdaldem `-compute_edges`.
    /// - Cost: one pass over the interior, 9 reads per pixel; the ramp lookup is a binary search.
    /// `values` holds `stride` samples a pixel, the metres at `band` (a DEM with an alpha band).
    func render(
        values: [Float], stride: Int = 1, band: Int = 0, valid: [UInt8], grid: MapFrame, tint: HypsometricTint?,
        into rgba: inout [UInt8]
    ) -> [Float] {
        let gw = grid.width, w = gw - 2, h = grid.height - 2
        precondition(
            w >= 1 && h >= 1 && band >= 0 && band < stride && values.count >= gw * grid.height * stride
                && valid.count >= gw * grid.height && rgba.count == w * h * 4)
        var metres = [Float](repeating: .nan, count: w * h)
        let light = Light(self)
        let baseRes = WebMercator.resolution(zoom: grid.zoom)
        values.withUnsafeBufferPointer { v in
            valid.withUnsafeBufferPointer { ok in
                rgba.withUnsafeMutableBufferPointer { out in
                    metres.withUnsafeMutableBufferPointer { m in
                        for j in 0..<h {
                            // Ground size of a pixel on this row; grid row j + 1 is interior row j.
                            let res = baseRes * cos(grid.lat(row: j + 1) * .pi / 180)
                            let inv8 = 1 / (8 * res)
                            for i in 0..<w {
                                let kc = (j + 1) * gw + i + 1, o = (j * w + i) * 4
                                guard ok[kc] != 0 else {
                                    out[o] = 0; out[o + 1] = 0; out[o + 2] = 0; out[o + 3] = 0; continue
                                }
                                let centre = v[kc * stride + band], zc = Double(centre)
                                m[j * w + i] = centre
                                @inline(__always) func z(_ k: Int) -> Double {
                                    ok[k] != 0 ? Double(v[k * stride + band]) : zc
                                }
                                let up = kc - gw, down = kc + gw
                                let a = z(up - 1), b = z(up), c = z(up + 1)
                                let d = z(kc - 1), f = z(kc + 1)
                                let g = z(down - 1), hh = z(down), ii = z(down + 1)
                                let dzdE = ((c + 2 * f + ii) - (a + 2 * d + g)) * inv8
                                let dzdN = ((a + 2 * b + c) - (g + 2 * hh + ii)) * inv8
                                let shade = light.shade(dzdE: dzdE, dzdN: dzdN)
                                guard let tint else {
                                    let grey = Self.grey(shade)
                                    out[o] = grey; out[o + 1] = grey; out[o + 2] = grey; out[o + 3] = 255
                                    continue
                                }
                                let col = tint.color(metres: zc)
                                let k = Self.tintFactor(shade: shade, sinAltitude: light.sinAlt)
                                out[o] = Colorizer.byte(Float(col.r * k)); out[o + 1] = Colorizer.byte(Float(col.g * k))
                                out[o + 2] = Colorizer.byte(Float(col.b * k)); out[o + 3] = Colorizer.byte(Float(col.a))
                            }
                        }
                    }
                }
            }
        }
        return metres
    }
}
