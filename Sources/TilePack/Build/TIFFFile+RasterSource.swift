import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
/// The TIFF reader as a tiling source: windowed reads of the first full-resolution image,
/// converted to Float. Cost per call: the blocks the window touches (through the reader's
/// bounded block cache) plus one Float per sample.
extension TIFFFile: RasterSource {
    public var width: Int { image.width }
    public var height: Int { image.height }
    public var bands: Int { image.bands }
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

    public func readFloats(x: Int, y: Int, width: Int, height: Int) throws -> [Float] {
        try read(window: PixelWindow(x: x, y: y, width: width, height: height)).floats()
    }
}
