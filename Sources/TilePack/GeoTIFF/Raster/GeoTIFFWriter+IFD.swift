import TilePackCore

#if _endian(big)
#error("GeoTIFFWriter writes sample bytes as they lie in memory and assumes a little-endian host")
#endif

/// The image file directory GeoTIFFWriter writes after the blocks: the baseline tags, the
/// georeferencing (scale and tie point, or a full transformation), the three GeoKey tags and
/// GDAL's no-data and metadata tags.
///
/// Cost: O(tags + blocks); built once per file, after the last block.
extension GeoTIFFWriter {
    func blockEntries(_ offsets: [UInt64], _ counts: [UInt64], big: Bool) -> [IFDEntry] {
        if big {
            return [IFDEntry(TIFFTag.tileOffsets, long8s: offsets), IFDEntry(TIFFTag.tileByteCounts, long8s: counts)]
        }
        return [
            IFDEntry(TIFFTag.tileOffsets, longs: offsets.map { UInt32(truncatingIfNeeded: $0) }),
            IFDEntry(TIFFTag.tileByteCounts, longs: counts.map { UInt32(truncatingIfNeeded: $0) }),
        ]
    }

    /// All tags except the block offsets and counts.
    func ifdEntries() -> [IFDEntry] {
        let o = options
        let spp = o.samplesPerPixel
        var e: [IFDEntry] = [
            IFDEntry(TIFFTag.imageWidth, longs: [UInt32(o.width)]),
            IFDEntry(TIFFTag.imageLength, longs: [UInt32(o.height)]),
            IFDEntry(TIFFTag.bitsPerSample, shorts: Array(repeating: UInt16(o.sampleType.byteWidth * 8), count: spp)),
            IFDEntry(TIFFTag.compression, shorts: [TIFFCompression.deflate]),
            IFDEntry(TIFFTag.photometric, shorts: [o.photometric.rawValue]),
            IFDEntry(TIFFTag.samplesPerPixel, shorts: [UInt16(spp)]),
            IFDEntry(TIFFTag.planarConfiguration, shorts: [1]),
            IFDEntry(TIFFTag.predictor, shorts: [o.predictor.rawValue]),
            IFDEntry(TIFFTag.tileWidth, longs: [UInt32(o.blockWidth)]),
            IFDEntry(TIFFTag.tileLength, longs: [UInt32(o.blockHeight)]),
        ]
        if let software = o.software { e.append(IFDEntry(TIFFTag.software, ascii: software)) }
        let extra = spp - (o.photometric == .rgb ? 3 : 1)
        if extra > 0 {
            var kinds = [UInt16](repeating: 0, count: extra)  // 0: unspecified data
            if o.alpha { kinds[extra - 1] = 2 }  // 2: unassociated alpha
            e.append(IFDEntry(TIFFTag.extraSamples, shorts: kinds))
        }
        let format: UInt16 = o.sampleType.isFloat ? 3 : (o.sampleType.isSignedInteger ? 2 : 1)
        e.append(IFDEntry(TIFFTag.sampleFormat, shorts: Array(repeating: format, count: spp)))
        if let t = o.geoTransform {
            let c = t.coefficients
            if c[2] == 0, c[4] == 0, c[1] > 0, c[5] < 0 {
                // PixelIsPoint files tie the CENTRE of pixel (0, 0) to the model point.
                let isPoint = o.geoKeys?.short(GeoKey.gtRasterType) == 2
                let tie = isPoint ? t.apply(col: 0.5, row: 0.5) : (c[0], c[3])
                e.append(IFDEntry(TIFFTag.modelPixelScale, doubles: [c[1], -c[5], 0]))
                e.append(IFDEntry(TIFFTag.modelTiepoint, doubles: [0, 0, 0, tie.0, tie.1, 0]))
            } else {
                let isPoint = o.geoKeys?.short(GeoKey.gtRasterType) == 2
                let origin = isPoint ? t.apply(col: 0.5, row: 0.5) : (c[0], c[3])
                e.append(
                    IFDEntry(
                        TIFFTag.modelTransformation,
                        doubles: [
                            c[1], c[2], 0, origin.0,
                            c[4], c[5], 0, origin.1,
                            0, 0, 0, 0,
                            0, 0, 0, 1,
                        ]))
            }
        }
        if let keys = o.geoKeys {
            let encoded = GeoTIFFWriter.encodeGeoKeys(keys)
            e.append(IFDEntry(TIFFTag.geoKeyDirectory, shorts: encoded.directory))
            if !encoded.doubles.isEmpty { e.append(IFDEntry(TIFFTag.geoDoubleParams, doubles: encoded.doubles)) }
            if !encoded.ascii.isEmpty { e.append(IFDEntry(TIFFTag.geoAsciiParams, ascii: encoded.ascii)) }
        }
        if let noData = o.noData {
            e.append(IFDEntry(TIFFTag.gdalNoData, ascii: GeoTIFFWriter.noDataText(noData)))
        }
        if let metadata = o.gdalMetadata, !metadata.items.isEmpty {
            e.append(IFDEntry(TIFFTag.gdalMetadata, ascii: metadata.xml))
        }
        return e
    }

    /// GDAL_NODATA text: integers without a fraction, other values in Swift's shortest
    /// round-tripping form, "nan"/"inf"/"-inf" as GDAL spells them.
    static func noDataText(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        if value.rounded() == value, abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }

    /// The three GeoTIFF key tags' contents: keys sorted by id (the spec requires it), shorts
    /// with more than one value stored at the end of the directory itself, doubles in the
    /// double params, text in the ASCII params with '|' after each string.
    static func encodeGeoKeys(_ keys: GeoKeyDirectory) -> (directory: [UInt16], doubles: [Double], ascii: String) {
        let sorted = keys.entries.sorted { $0.id < $1.id }
        var directory: [UInt16] = keys.versionParts + [UInt16(sorted.count)]
        var extraShorts: [UInt16] = []
        var doubles: [Double] = []
        var ascii = ""
        let keysEnd = 4 + 4 * sorted.count
        for (id, value) in sorted {
            switch value {
            case .shorts(let v) where v.count == 1:
                directory += [id, 0, 1, v[0]]
            case .shorts(let v):
                directory += [id, TIFFTag.geoKeyDirectory, UInt16(v.count), UInt16(keysEnd + extraShorts.count)]
                extraShorts += v
            case .doubles(let v):
                directory += [id, TIFFTag.geoDoubleParams, UInt16(v.count), UInt16(doubles.count)]
                doubles += v
            case .ascii(let s):
                directory += [id, TIFFTag.geoAsciiParams, UInt16(s.utf8.count + 1), UInt16(ascii.utf8.count)]
                ascii += s + "|"
            }
        }
        return (directory + extraShorts, doubles, ascii)
    }
}
