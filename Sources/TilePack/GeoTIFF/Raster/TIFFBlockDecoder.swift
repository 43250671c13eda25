import TilePackCore
/// Turns one stored block into little-endian in-memory samples: read, bit-order fix,
/// decompress, then byte order, predictor and 24→32-bit widening, in the order libtiff applies them.
struct TIFFBlockDecoder {
    let image: TIFFImage
    let order: TIFFByteOrder
    let path: String

    func decode(_ index: Int, handle: TIFFFileHandle) throws(TIFFError) -> [UInt8] {
        let perPlane = image.blocksAcross * image.blocksDown
        let blockRow = (index % perPlane) / image.blocksAcross
        let rows = image.storedRows(blockRow: blockRow)
        let spb = image.samplesPerBlockPixel
        let rowSamples = image.blockWidth * spb
        let fileBytes = image.fileSampleBytes
        let expected = rowSamples * rows * fileBytes
        let outBytes = rowSamples * image.blockHeight * image.sampleType.byteWidth
        let what = "\(image.isTiled ? "tile" : "strip") \(index) of IFD \(image.ifdIndex)"

        let offset = image.blockOffsets[index], count = image.blockByteCounts[index]
        if offset == 0 || count == 0 {
            // A sparse block (GDAL writes them for empty areas): reads as zeros.
            return [UInt8](repeating: 0, count: outBytes)
        }
        // No supported codec needs more input than this to produce `expected` bytes (LZW's
        // worst case is 1.5×, Deflate and PackBits add < 1 %): a block claiming more is read
        // only that far, so a byte count cannot size an allocation beyond twice the block.
        let maxInput = UInt64(expected) * 2 + 65_536
        let readCount = image.compression == TIFFCompression.none ? min(count, UInt64(expected)) : min(count, maxInput)
        guard readCount <= handle.size, let readBytes = Int(exactly: readCount) else {
            throw TIFFError(
                path: path, code: .absurdDimensions, detail: "\(what) claims \(count) bytes, more than the file")
        }
        var raw = try handle.read(offset: offset, count: readBytes, what: what)
        if image.fillOrderReversed {
            for i in raw.indices { raw[i] = Self.reversedBits(raw[i]) }
        }

        // No codec expands data past these ratios (PackBits 2→128 bytes, Deflate ~1032:1, one
        // 12-bit LZW code → at most 4096 bytes): refuse before allocating for a bogus block.
        let maxRatio =
            switch image.compression {
            case TIFFCompression.none: 1
            case TIFFCompression.packBits: 64
            case TIFFCompression.lzw: 4096
            default: 1040
            }
        guard raw.count.multipliedReportingOverflow(by: maxRatio).partialValue >= expected else {
            throw TIFFError(
                path: path, code: .corruptBlock,
                detail: "\(what) holds \(raw.count) bytes, too few to decode to \(expected) (\(image.compressionName))")
        }
        var decoded = [UInt8](repeating: 0, count: expected)
        let produced: Int
        do {
            produced = try raw.withUnsafeBufferPointer { (src) throws(TIFFDecompression.Failure) -> Int in
                try decoded.withUnsafeMutableBufferPointer { (dst) throws(TIFFDecompression.Failure) -> Int in
                    try TIFFDecompression.decode(image.compression, src, into: dst)
                }
            }
        } catch {
            throw TIFFError(path: path, code: .corruptBlock, detail: "\(what): \(error.message)")
        }
        guard produced == expected else {
            throw TIFFError(
                path: path, code: .corruptBlock,
                detail: "\(what) decodes to \(produced) bytes, expected \(expected) (\(image.compressionName))")
        }

        var out: [UInt8]
        if image.predictor == 3 {
            out = [UInt8](repeating: 0, count: outBytes)
            decoded.withUnsafeMutableBufferPointer { d in
                out.withUnsafeMutableBufferPointer { o in
                    TIFFPredictor.undoFloatingPoint(
                        d, into: o, rows: rows, rowSamples: rowSamples,
                        stride: spb, sampleBytes: fileBytes)
                }
            }
            return out
        }
        if image.bitsPerSample == 24 {
            return widen24(decoded, outBytes: outBytes)
        }
        if order == .big && fileBytes > 1 {
            Self.swapBytes(&decoded, width: fileBytes)
        }
        if image.predictor == 2 {
            decoded.withUnsafeMutableBytes { b in
                TIFFPredictor.undoHorizontal(b, rows: rows, rowSamples: rowSamples, stride: spb, sampleBytes: fileBytes)
            }
        }
        if decoded.count < outBytes {
            // The last strip stores fewer rows; pad to a full block so all blocks share a shape.
            decoded.append(contentsOf: repeatElement(0, count: outBytes - decoded.count))
        }
        return decoded
    }

    /// 24-bit samples widened to 32 (sign-extended for signed), little-endian.
    ///
    /// 24-bit samples are read most significant byte first in either byte order: libtiff
    /// hands 3-byte samples through unswapped and GDAL and tifffile both assemble them as a
    /// big-endian bit stream (the manifest's 24-bit II file confirms it).
    private func widen24(_ decoded: [UInt8], outBytes: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: outBytes)
        let signed = image.sampleType.isSignedInteger
        let n = decoded.count / 3
        decoded.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { o in
                for i in 0..<n {
                    let a = s[i * 3], b = s[i * 3 + 1], c = s[i * 3 + 2]
                    o[i * 4] = c; o[i * 4 + 1] = b; o[i * 4 + 2] = a
                    o[i * 4 + 3] = signed && a & 0x80 != 0 ? 0xFF : 0
                }
            }
        }
        return out
    }

    static func swapBytes(_ bytes: inout [UInt8], width: Int) {
        bytes.withUnsafeMutableBufferPointer { p in
            var i = 0
            let n = p.count - p.count % width
            while i < n {
                var lo = i, hi = i + width - 1
                while lo < hi { p.swapAt(lo, hi); lo += 1; hi -= 1 }
                i += width
            }
        }
    }

    @inline(__always)
    static func reversedBits(_ b: UInt8) -> UInt8 {
        var v = b
        v = (v & 0xF0) >> 4 | (v & 0x0F) << 4
        v = (v & 0xCC) >> 2 | (v & 0x33) << 2
        v = (v & 0xAA) >> 1 | (v & 0x55) << 1
        return v
    }
}
