import TilePackCore
import TilePackGeoTIFF
import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One raster of the synthetic Mont Blanc sample region: its grid, georeferencing and
/// sample type, and how to render any window of it from a ``SyntheticTerrain``.
///
/// Every pixel depends only on its own position (and, for the colour image's shading, on
/// its neighbours' positions), never on the window it is rendered in, so a file written
/// block by block equals ``rawSamples()`` rendered in one piece.
///
/// Cost: about one terrain sample per pixel (the colour image adds a one-pixel border per
/// window and a UTM projection per sample).
public struct SampleRaster: Sendable {
    public enum Content: Sendable, Equatable {
        /// Elevation in metres, one band, nodata in a small top-left corner triangle.
        case elevation
        /// Shaded land-cover colour, RGB (plus alpha, transparent in a bottom-right corner triangle).
        case color
    }

    public let content: Content
    public let width: Int
    public let height: Int
    public let sampleType: SampleType
    /// Colour only: a fourth, unassociated-alpha band.
    public let alpha: Bool
    /// Pixel-corner geotransform in the raster's CRS.
    public let geoTransform: GeoTransform
    public let geoKeys: GeoKeyDirectory
    /// EPSG code of the CRS: 32632 (elevation) or 4326 (colour).
    public let epsg: Int
    /// Elevation only: the nodata value (−32768 for signed and float types, 0 for unsigned).
    public let noData: Double?
    public let terrain: SyntheticTerrain
    /// Pixels between terrain evaluations: 1 evaluates every pixel; `n` evaluates a lattice
    /// every `n` pixels (shading from its neighbours there) and interpolates bilinearly, about
    /// n² times cheaper, for very large benchmark images (``withTerrainStep(_:)``).
    public private(set) var terrainStep = 1

    /// Samples per pixel.
    public var bands: Int { content == .elevation ? 1 : (alpha ? 4 : 3) }

    /// This raster with the terrain evaluated every `step` pixels and interpolated between:
    /// the same grid, georeferencing and types, n² fewer terrain samples. A lattice node
    /// depends only on its position, so blocks still equal ``rawSamples()``.
    /// - Precondition: `step` ≥ 1.
    public func withTerrainStep(_ step: Int) -> SampleRaster {
        precondition(step >= 1, "the terrain step is at least one pixel")
        var copy = self
        copy.terrainStep = step
        return copy
    }

    /// Writer options matching this raster (tiled 256×256, Deflate, predictor 2 or 3).
    public func writerOptions() -> GeoTIFFWriter.Options {
        var o = GeoTIFFWriter.Options(width: width, height: height, samplesPerPixel: bands, sampleType: sampleType)
        o.photometric = content == .color ? .rgb : .minIsBlack
        o.alpha = alpha
        o.geoTransform = geoTransform
        o.geoKeys = geoKeys
        o.noData = noData
        return o
    }

    /// Writes the raster as a GeoTIFF, rendering blocks in parallel.
    /// - Parameter options: writer options to use instead of ``writerOptions()`` (block size,
    ///   predictor, format…); image size, bands and sample type must match this raster.
    @discardableResult
    public func write(to path: String, options: GeoTIFFWriter.Options? = nil) throws -> GeoTIFFWriter.Summary {
        let o = options ?? writerOptions()
        precondition(
            o.width == width && o.height == height && o.samplesPerPixel == bands && o.sampleType == sampleType,
            "writer options must describe this raster")
        let writer = try GeoTIFFWriter(path: path, options: o)
        let rowBytes = o.blockWidth * bands * sampleType.byteWidth
        return try writer.writeConcurrently { blockX, blockY, block in
            let r = writer.blockRegion(blockX: blockX, blockY: blockY)
            block.withUnsafeMutableBytes {
                render(x: r.x, y: r.y, width: r.width, height: r.height, into: $0, rowBytes: rowBytes)
            }
        }
    }

    /// The whole raster, row-major, samples interleaved, little-endian (memory: the full image).
    public func rawSamples() -> [UInt8] {
        let rowBytes = width * bands * sampleType.byteWidth
        var out = [UInt8](repeating: 0, count: rowBytes * height)
        out.withUnsafeMutableBytes { render(x: 0, y: 0, width: width, height: height, into: $0, rowBytes: rowBytes) }
        return out
    }

    /// Renders the window at (`x`, `y`) of `width` × `height` pixels (inside the raster) into
    /// `buffer`, rows `rowBytes` apart.
    public func render(
        x: Int, y: Int, width w: Int, height h: Int, into buffer: UnsafeMutableRawBufferPointer, rowBytes: Int
    ) {
        precondition(x >= 0 && y >= 0 && w >= 0 && h >= 0 && x + w <= width && y + h <= height)
        precondition(
            rowBytes >= w * bands * sampleType.byteWidth
                && buffer.count >= rowBytes * max(0, h - 1) + w * bands * sampleType.byteWidth)
        guard w > 0, h > 0 else { return }
        if terrainStep > 1 {
            renderInterpolated(x: x, y: y, w: w, h: h, buffer, rowBytes)
            return
        }
        switch content {
        case .elevation: renderElevation(x: x, y: y, w: w, h: h, buffer, rowBytes)
        case .color: renderColor(x: x, y: y, w: w, h: h, buffer, rowBytes)
        }
    }

    /// Size of the no-data (elevation) or transparent (colour alpha) corner triangle.
    private var cornerSize: Int { max(4, min(width, height) / 12) }

    private func renderElevation(
        x: Int, y: Int, w: Int, h: Int, _ buffer: UnsafeMutableRawBufferPointer, _ rowBytes: Int
    ) {
        let c = geoTransform.coefficients
        let size = sampleType.byteWidth
        for r in 0..<h {
            let row = y + r
            let northing = c[3] + (Double(row) + 0.5) * c[5]
            for k in 0..<w {
                let col = x + k
                let value: Double
                if col + row < cornerSize, let noData {
                    value = noData
                } else {
                    let easting = c[0] + (Double(col) + 0.5) * c[1]
                    let e = terrain.sample(easting: easting, northing: northing).elevation
                    value = sampleType.isFloat ? e : e.rounded()
                }
                Self.store(value, as: sampleType, at: buffer.baseAddress! + r * rowBytes + k * size)
            }
        }
    }

    private func renderColor(x: Int, y: Int, w: Int, h: Int, _ buffer: UnsafeMutableRawBufferPointer, _ rowBytes: Int) {
        let c = geoTransform.coefficients
        // Terrain on the pixel-centre grid with a one-pixel border, for the shading normals.
        let gw = w + 2, gh = h + 2
        var elevation = [Double](repeating: 0, count: gw * gh)
        var water = [SyntheticTerrain.Water](repeating: .none, count: gw * gh)
        var utm = [(Double, Double)](repeating: (0, 0), count: gw * gh)
        for gr in 0..<gh {
            let lat = c[3] + (Double(y + gr - 1) + 0.5) * c[5]
            for gc in 0..<gw {
                let lon = c[0] + (Double(x + gc - 1) + 0.5) * c[1]
                let p = SampleRegion.utm32N.project(lon: lon, lat: lat)
                let s = terrain.sample(easting: p.x, northing: p.y)
                elevation[gr * gw + gc] = s.elevation
                water[gr * gw + gc] = s.water
                utm[gr * gw + gc] = p
            }
        }
        let metresPerDegree = 6_371_000.0 * .pi / 180
        let dyMetres = abs(c[5]) * metresPerDegree
        // Sun from the north-west, 45° up, as hillshades conventionally are.
        let sun = (x: -0.5, y: 0.5, z: 0.7071067811865476)
        let size = sampleType.byteWidth
        let maxValue = sampleType.isFloat ? 1.0 : Double((1 << (8 * size)) - 1)
        for r in 0..<h {
            let row = y + r
            let lat = c[3] + (Double(row) + 0.5) * c[5]
            let dxMetres = c[1] * metresPerDegree * cos(lat * .pi / 180)
            for k in 0..<w {
                let col = x + k
                let g = (r + 1) * gw + (k + 1)
                let z = elevation[g]
                let dzdx = (elevation[g + 1] - elevation[g - 1]) / (2 * dxMetres)
                let dzdy = (elevation[g - gw] - elevation[g + gw]) / (2 * dyMetres)  // rows run south
                let norm = (dzdx * dzdx + dzdy * dzdy + 1).squareRoot()
                let shade = max(0, (-dzdx * sun.x - dzdy * sun.y + sun.z) / norm)
                let slope = atan((dzdx * dzdx + dzdy * dzdy).squareRoot()) * 180 / .pi
                // Cosine of the aspect: 1 on a slope facing (falling towards) north.
                let gradient = (dzdx * dzdx + dzdy * dzdy).squareRoot()
                let northness = gradient > 1e-9 ? -dzdy / gradient : 0
                var rgb = landCover(elevation: z, water: water[g], slope: slope, northness: northness, at: utm[g])
                let light = water[g] == .none ? 0.42 + 0.8 * shade : 0.85 + 0.2 * shade
                rgb = (rgb.0 * light, rgb.1 * light, rgb.2 * light)
                let base = buffer.baseAddress! + r * rowBytes + k * bands * size
                Self.store(Self.quantize(rgb.0, maxValue, sampleType), as: sampleType, at: base)
                Self.store(Self.quantize(rgb.1, maxValue, sampleType), as: sampleType, at: base + size)
                Self.store(Self.quantize(rgb.2, maxValue, sampleType), as: sampleType, at: base + 2 * size)
                if alpha {
                    let transparent = (width - 1 - col) + (height - 1 - row) < cornerSize
                    Self.store(transparent ? 0 : maxValue, as: sampleType, at: base + 3 * size)
                }
            }
        }
    }

    /// ``terrainStep`` > 1: renders the lattice (a raster `terrainStep` times coarser over the
    /// same origin, as float64 without nodata or alpha) around the window, then each pixel
    /// from its four nearest lattice nodes; the nodata corner and alpha stay per pixel.
    private func renderInterpolated(
        x: Int, y: Int, w: Int, h: Int, _ buffer: UnsafeMutableRawBufferPointer, _ rowBytes: Int
    ) {
        let step = terrainStep, fs = Double(step)
        let cw = (width + step - 1) / step, ch = (height + step - 1) / step
        let c = geoTransform.coefficients
        let coarse = SampleRaster(
            content: content, width: cw, height: ch, sampleType: .float64, alpha: false,
            geoTransform: GeoTransform([c[0], c[1] * fs, c[2] * fs, c[3], c[4] * fs, c[5] * fs]),
            geoKeys: geoKeys, epsg: epsg, noData: nil, terrain: terrain)
        // Lattice coordinate of a pixel centre, and the node at or before it (clamped).
        func lattice(_ p: Int, _ n: Int) -> (Int, Int, Double) {
            let u = (Double(p) + 0.5) / fs - 0.5
            let i = Int(u.rounded(.down))
            if i < 0 { return (0, 0, 0) }
            if i >= n - 1 { return (n - 1, n - 1, 0) }
            return (i, i + 1, u - Double(i))
        }
        let (cx0, _, _) = lattice(x, cw), (_, cx1, _) = lattice(x + w - 1, cw)
        let (cy0, _, _) = lattice(y, ch), (_, cy1, _) = lattice(y + h - 1, ch)
        let lw = cx1 - cx0 + 1, lh = cy1 - cy0 + 1, lb = coarse.bands
        var nodes = [Double](repeating: 0, count: lw * lh * lb)
        nodes.withUnsafeMutableBytes {
            coarse.render(x: cx0, y: cy0, width: lw, height: lh, into: $0, rowBytes: lw * lb * 8)
        }
        let size = sampleType.byteWidth
        let maxValue = sampleType.isFloat ? 1.0 : Double((1 << (8 * size)) - 1)
        let columns = (0..<w).map { lattice(x + $0, cw) }
        nodes.withUnsafeBufferPointer { n in
            for r in 0..<h {
                let row = y + r
                let (j0, j1, ty) = lattice(row, ch)
                let a = (j0 - cy0) * lw, b = (j1 - cy0) * lw
                for k in 0..<w {
                    let col = x + k
                    let (i0, i1, tx) = columns[k]
                    let p00 = (a + i0 - cx0) * lb, p01 = (a + i1 - cx0) * lb
                    let p10 = (b + i0 - cx0) * lb, p11 = (b + i1 - cx0) * lb
                    let base = buffer.baseAddress! + r * rowBytes + k * bands * size
                    for band in 0..<lb {
                        let top = n[p00 + band] + (n[p01 + band] - n[p00 + band]) * tx
                        let bottom = n[p10 + band] + (n[p11 + band] - n[p10 + band]) * tx
                        let v = top + (bottom - top) * ty
                        switch content {
                        case .elevation:
                            var value = sampleType.isFloat ? v : v.rounded()
                            if col + row < cornerSize, let noData { value = noData }
                            Self.store(value, as: sampleType, at: base)
                        case .color:
                            Self.store(Self.quantize(v, maxValue, sampleType), as: sampleType, at: base + band * size)
                        }
                    }
                    if content == .color, alpha {
                        let transparent = (width - 1 - col) + (height - 1 - row) < cornerSize
                        Self.store(transparent ? 0 : maxValue, as: sampleType, at: base + 3 * size)
                    }
                }
            }
        }
    }

    /// Unshaded colour (0…1) of the ground: water, forest and meadow below the tree line,
    /// alpine meadow, rock on steep or high ground, snow above a wavy snow line (lower on
    /// north faces).
    private func landCover(
        elevation z: Double, water: SyntheticTerrain.Water, slope: Double, northness: Double,
        at p: (Double, Double)
    ) -> (Double, Double, Double) {
        switch water {
        case .lake: return (0.16, 0.33, 0.50)
        case .river: return (0.30, 0.45, 0.55)
        case .none: break
        }
        let broad = terrain.variation(easting: p.0, northing: p.1, wavelength: 1500)
        let fine = terrain.variation(easting: p.0, northing: p.1, wavelength: 120)
        let snowLine = 2850 + 250 * broad - 200 * northness
        if z > snowLine && slope < 48 {
            let t = 0.93 + 0.05 * fine
            return (t, t + 0.01, t + 0.04)
        }
        let treeLine = 1950 + 150 * broad
        if slope > 38 || z > 2450 + 150 * broad {
            let t = 0.45 + 0.08 * fine
            return (t, t * 0.95, t * 0.88)
        }
        if z > treeLine {
            return (0.55 + 0.05 * fine, 0.62 + 0.05 * fine, 0.36)
        }
        let patch = terrain.variation(easting: p.0, northing: p.1, wavelength: 900) + 0.25 * fine
        // Meadows on the valley floors and in clearings, forest on the slopes.
        if patch > -0.2 && z > 1080 + 60 * fine {
            return (0.17, 0.32 + 0.04 * fine, 0.16)
        }
        return (0.45, 0.60 + 0.05 * fine, 0.30)
    }

    @inline(__always)
    private static func quantize(_ v: Double, _ maxValue: Double, _ type: SampleType) -> Double {
        let clamped = min(1, max(0, v))
        return type.isFloat ? clamped : (clamped * maxValue).rounded()
    }

    /// Stores `value` (already in range and rounded for integer types) as one sample.
    @inline(__always)
    private static func store(_ value: Double, as type: SampleType, at p: UnsafeMutableRawPointer) {
        switch type {
        case .uint8: p.storeBytes(of: UInt8(value), as: UInt8.self)
        case .int8: p.storeBytes(of: Int8(value), as: Int8.self)
        case .uint16: p.storeBytes(of: UInt16(value), as: UInt16.self)
        case .int16: p.storeBytes(of: Int16(value), as: Int16.self)
        case .uint32: p.storeBytes(of: UInt32(value), as: UInt32.self)
        case .int32: p.storeBytes(of: Int32(value), as: Int32.self)
        case .uint64: p.storeBytes(of: UInt64(value), as: UInt64.self)
        case .int64: p.storeBytes(of: Int64(value), as: Int64.self)
        case .float32: p.storeBytes(of: Float(value), as: Float.self)
        case .float64: p.storeBytes(of: value, as: Double.self)
        }
    }
}

extension SampleRaster {
    /// Lowercase hex SHA-256 of raw samples (what `sample-region --checksum` prints).
    public static func sha256(of samples: [UInt8]) -> String {
        SHA256.hash(data: samples).hexString
    }
}

/// The synthetic Mont Blanc sample region: a DEM in UTM 32N and a colour image in WGS 84
/// geographic coordinates over the same ground (Les Houches–Chamonix–Argentière in the
/// north, Mont Blanc, Courmayeur and the Val Ferret in the south).
public enum SampleRegion {
    /// DEM bounds, EPSG:32632 metres: 23.04 km square centred near the Aiguille du Midi.
    public static let elevationBounds = (west: 323_910.0, south: 5_069_160.0, east: 346_950.0, north: 5_092_200.0)
    /// Colour image bounds, EPSG:4326 degrees (0.3072° × 0.2304°).
    public static let colorBounds = (west: 6.7264, south: 45.7448, east: 7.0336, north: 45.9752)

    /// Sample types that hold 900…4800 m (and the −32768/0 nodata).
    public static let elevationTypes: [SampleType] = [
        .int16, .uint16, .int32, .uint32, .int64, .uint64, .float32, .float64,
    ]
    /// Sample types for the colour image (integers use their full range, floats 0…1).
    public static let colorTypes: [SampleType] = [.uint8, .uint16, .uint32, .float32, .float64]

    /// The terrain for a DEM of `elevationSize` pixels across: noise detail down to about
    /// 1.5 DEM pixels, so bigger rasters of the same ground get finer detail.
    public static func terrain(seed: UInt64, elevationSize: Int) -> SyntheticTerrain {
        let pixel = (elevationBounds.east - elevationBounds.west) / Double(max(1, elevationSize))
        return SyntheticTerrain(seed: seed, finestWavelength: 1.5 * pixel)
    }

    /// The DEM: `width` × `height` pixels over ``elevationBounds`` (768 × 768 gives 30 m pixels).
    /// - Precondition: `sampleType` is one of ``elevationTypes``.
    public static func elevation(
        terrain: SyntheticTerrain, width: Int = 768, height: Int = 768,
        sampleType: SampleType = .int16
    ) -> SampleRaster {
        precondition(elevationTypes.contains(sampleType) && width > 0 && height > 0)
        let b = elevationBounds
        let transform = GeoTransform([
            b.west, (b.east - b.west) / Double(width), 0, b.north, 0, -(b.north - b.south) / Double(height),
        ])
        let keys = GeoKeyDirectory(entries: [
            (GeoKey.gtModelType, .shorts([1])),  // projected
            (GeoKey.gtRasterType, .shorts([1])),  // pixel is area
            (GeoKey.gtCitation, .ascii("WGS 84 / UTM zone 32N")),
            (GeoKey.projectedCSType, .shorts([32632])),
            (GeoKey.projLinearUnits, .shorts([9001])),  // metre
        ])
        return SampleRaster(
            content: .elevation, width: width, height: height, sampleType: sampleType, alpha: false,
            geoTransform: transform, geoKeys: keys, epsg: 32632,
            noData: sampleType.isSignedInteger || sampleType.isFloat ? -32768 : 0, terrain: terrain)
    }

    /// The colour image: `width` × `height` pixels over ``colorBounds`` (1024 × 768 gives 0.0003° pixels).
    /// - Precondition: `sampleType` is one of ``colorTypes``.
    public static func color(
        terrain: SyntheticTerrain, width: Int = 1024, height: Int = 768,
        sampleType: SampleType = .uint8, alpha: Bool = false
    ) -> SampleRaster {
        precondition(colorTypes.contains(sampleType) && width > 0 && height > 0)
        let b = colorBounds
        let transform = GeoTransform([
            b.west, (b.east - b.west) / Double(width), 0, b.north, 0, -(b.north - b.south) / Double(height),
        ])
        let keys = GeoKeyDirectory(entries: [
            (GeoKey.gtModelType, .shorts([2])),  // geographic
            (GeoKey.gtRasterType, .shorts([1])),
            (GeoKey.geographicType, .shorts([4326])),
            (GeoKey.geogCitation, .ascii("WGS 84")),
            (GeoKey.geogAngularUnits, .shorts([9102])),  // degree
            (GeoKey.geogSemiMajorAxis, .doubles([6_378_137])),
            (GeoKey.geogInvFlattening, .doubles([298.257223563])),
        ])
        return SampleRaster(
            content: .color, width: width, height: height, sampleType: sampleType, alpha: alpha,
            geoTransform: transform, geoKeys: keys, epsg: 4326, noData: nil, terrain: terrain)
    }

    /// The DEM's CRS (UTM zone 32N on WGS 84), for projecting the colour image's pixels
    /// onto the terrain.
    static let utm32N: CRS = {
        do { return try CRS(epsg: 32632) } catch {
            preconditionFailure("EPSG:32632 is in the built-in table: \(error)")
        }
    }()
}
