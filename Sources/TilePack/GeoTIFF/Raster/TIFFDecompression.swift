import TilePackCore
/// Block decompressors for the TIFF compressions the reader supports. Each fills a buffer
/// of exactly the size the block needs and reports how many bytes the data produced; the
/// caller turns a short block into `.corruptBlock`. Output past the buffer is dropped (a
/// stream that decodes to more than the block, as libtiff accepts).
enum TIFFDecompression {
    /// Why a block's data could not be decoded.
    struct Failure: Error {
        var message: String
    }

    /// Decodes `input` with `compression` into `output`, returning bytes produced.
    /// - Cost: O(input + output), no allocation besides LZW's 12 KiB table.
    static func decode(
        _ compression: UInt16, _ input: UnsafeBufferPointer<UInt8>,
        into output: UnsafeMutableBufferPointer<UInt8>
    ) throws(Failure) -> Int {
        switch compression {
        case TIFFCompression.none:
            let n = min(input.count, output.count)
            if n > 0 { output.baseAddress!.update(from: input.baseAddress!, count: n) }
            return n
        case TIFFCompression.lzw:
            return try lzw(input, into: output)
        case TIFFCompression.packBits:
            return packBits(input, into: output)
        case TIFFCompression.deflate, TIFFCompression.deflateLegacy:
            do {
                return try Zlib.inflate(UnsafeRawBufferPointer(input), into: UnsafeMutableRawBufferPointer(output))
            } catch {
                throw Failure(message: "deflate: \((error as? Zlib.Failure)?.detail ?? "\(error)")")
            }
        default:
            preconditionFailure("compression \(compression) passed validation but has no decoder")
        }
    }

    /// PackBits (Apple/TIFF run-length): a header byte n, then n+1 literal bytes (n ≥ 0) or
    /// one byte repeated 1-n times (n < 0); -128 is a no-op.
    static func packBits(_ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var i = 0, o = 0
        let inCount = input.count, outCount = output.count
        while i < inCount, o < outCount {
            let n = Int(Int8(bitPattern: input[i]))
            i += 1
            if n >= 0 {
                let len = min(n + 1, inCount - i, outCount - o)
                for k in 0..<len { output[o + k] = input[i + k] }
                i += n + 1
                o += len
            } else if n != -128 {
                guard i < inCount else { break }
                let byte = input[i]
                i += 1
                let len = min(1 - n, outCount - o)
                for k in 0..<len { output[o + k] = byte }
                o += len
            }
        }
        return o
    }

    /// TIFF LZW (variable 9–12-bit codes, Clear 256, EndOfInformation 257).
    ///
    /// New-style streams are MSB-first and widen the code one entry "early" (at 511, 1023,
    /// 2047), as TIFF 6.0 specifies. Old-style (pre-6.0 libtiff, "compat") streams are
    /// LSB-first and widen on time; like libtiff, they are recognised by a first byte of 0
    /// with the low bit of the second byte set (a Clear code written LSB-first).
    static func lzw(
        _ input: UnsafeBufferPointer<UInt8>, into output: UnsafeMutableBufferPointer<UInt8>
    ) throws(Failure) -> Int {
        let oldStyle = input.count >= 2 && input[0] == 0 && input[1] & 1 != 0
        let early = oldStyle ? 0 : 1
        let tableSize = 4096
        var prefix = [UInt16](repeating: 0, count: tableSize)
        var suffix = [UInt8](repeating: 0, count: tableSize)
        var first = [UInt8](repeating: 0, count: tableSize)
        var length = [UInt16](repeating: 0, count: tableSize)
        for c in 0..<256 {
            suffix[c] = UInt8(c); first[c] = UInt8(c); length[c] = 1
        }
        var next = 258, width = 9, old = -1
        var bitBuffer: UInt64 = 0, bitCount = 0, pos = 0
        var o = 0
        let outCount = output.count, inCount = input.count

        return try prefix.withUnsafeMutableBufferPointer { (prefix) throws(Failure) -> Int in
            while o < outCount {
                // Refill to at least `width` bits.
                while bitCount < width, pos < inCount {
                    if oldStyle {
                        bitBuffer |= UInt64(input[pos]) << UInt64(bitCount)
                    } else {
                        bitBuffer = bitBuffer << 8 | UInt64(input[pos])
                    }
                    bitCount += 8
                    pos += 1
                }
                guard bitCount >= width else { break }  // data ran out without EOI: keep what we have
                let code: Int
                let mask = (UInt64(1) << UInt64(width)) - 1
                if oldStyle {
                    code = Int(bitBuffer & mask)
                    bitBuffer >>= UInt64(width)
                } else {
                    code = Int((bitBuffer >> UInt64(bitCount - width)) & mask)
                    bitBuffer &= (UInt64(1) << UInt64(bitCount - width)) - 1
                }
                bitCount -= width

                if code == 256 {
                    next = 258; width = 9; old = -1
                    continue
                }
                if code == 257 { break }
                if old < 0 {
                    guard code < 256 else {
                        throw Failure(message: "LZW: first code \(code) after Clear is not a literal")
                    }
                    output[o] = UInt8(code)
                    o += 1
                    old = code
                    continue
                }
                let emitted: Int
                if code < next {
                    emitted = code
                    if next < tableSize {
                        prefix[next] = UInt16(old); suffix[next] = first[code]
                        first[next] = first[old]; length[next] = length[old] &+ 1
                    }
                } else if code == next && next < tableSize {
                    // KwKwK: the code being defined is the old string plus its own first byte.
                    prefix[next] = UInt16(old); suffix[next] = first[old]
                    first[next] = first[old]; length[next] = length[old] &+ 1
                    emitted = code
                } else {
                    throw Failure(message: "LZW: code \(code) is beyond the table (next free \(next))")
                }
                // Write the string backwards from its end, clipping anything past the buffer.
                let len = Int(length[emitted])
                var c = emitted
                var at = o + len - 1
                while at >= o {
                    if at < outCount { output[at] = suffix[c] }
                    c = Int(prefix[c])
                    at -= 1
                }
                o = min(o + len, outCount)
                old = code
                if next < tableSize { next += 1 }
                if next + early >= (1 << width), width < 12 { width += 1 }
            }
            return o
        }
    }
}
