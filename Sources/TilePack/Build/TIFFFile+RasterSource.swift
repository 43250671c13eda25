import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
/// The TIFF reader as a build source: windowed reads of the first full-resolution image,
/// converted to Float. Cost per call: the blocks the window touches (through the reader's
/// bounded block cache) plus one Float per sample.
extension TIFFFile: RasterSource {
    public var width: Int { image.width }
    public var height: Int { image.height }
    public var bands: Int { image.bands }
    public var decodedBlockBytes: Int { image.decodedBlockBytes }
    public var sampleType: SampleType { image.sampleType }
    public var nodata: Double? { image.nodata }
    /// Palette images only (photometric 3); other images may carry a stray ColorMap tag.
    public var colorMap: [UInt16]? { image.photometric == 3 ? image.colorMap : nil }

    /// The first extra sample that TIFF marks as alpha (ExtraSamples 1 = associated,
    /// 2 = unassociated). Extra samples are the last `extraSamples.count` bands.
    public var alphaBand: Int? {
        let first = image.bands - image.extraSamples.count
        guard let i = image.extraSamples.firstIndex(where: { $0 == 1 || $0 == 2 }) else { return nil }
        return first + i
    }

    /// The vertical GeoKeys (0 means undefined and is dropped) and GDAL_METADATA's band
    /// UNITTYPE, DESCRIPTION and COLORINTERP items.
    public var terrainHints: TerrainHints {
        let keys = image.geoKeys
        func key(_ id: UInt16) -> UInt16? { keys?.short(id).flatMap { $0 == 0 ? nil : $0 } }
        var hints = TerrainHints(
            verticalCSType: key(GeoKey.verticalCSType), verticalDatum: key(GeoKey.verticalDatum),
            verticalUnits: key(GeoKey.verticalUnits))
        for item in image.gdalMetadata?.items ?? [] {
            guard let band = item.sample, band < image.bands, item.domain == nil else { continue }
            let value = String(item.value.trimmingWhitespace())
            guard !value.isEmpty else { continue }
            switch item.role ?? item.name.lowercased() {
            case "unittype": hints.unitTypes[band] = value
            case "description": hints.descriptions[band] = value
            case "colorinterp": hints.colorInterps[band] = value
            default: break
            }
        }
        return hints
    }

    /// The byte counts of the image's tiles or strips (planes summed).
    /// - Cost: O(blocks), no file access (the counts were read with the directory).
    public var storedBytes: StoredByteMap? {
        let image = image
        var bytes: [UInt64] = []
        bytes.reserveCapacity(image.blocksAcross * image.blocksDown)
        for row in 0..<image.blocksDown {
            for column in 0..<image.blocksAcross {
                bytes.append(image.storedByteCount(blockColumn: column, blockRow: row))
            }
        }
        return StoredByteMap(
            blockWidth: image.blockWidth, blockHeight: image.blockHeight,
            blocksAcross: image.blocksAcross, blocksDown: image.blocksDown, bytes: bytes)
    }

    public func readFloats(x: Int, y: Int, width: Int, height: Int) throws -> [Float] {
        try read(window: PixelWindow(x: x, y: y, width: width, height: height)).floats()
    }
}
