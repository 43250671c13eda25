import TilePackCore
import TilePackCodec

// Colours A and B: 5/5/4- and 5/5/5-bit quantisation and the first colours of every block (bounds or principal axis).
// The encoder's levels and per-image driver are in PVRTCEncoder.swift; docs/PVRTC.md tells the algorithm.
extension PVRTCEncoder {
    /// 8-bit value the decoder gives a flat 5-bit channel: `(16c >> 1) + (16c >> 6)`.
    @inline(__always) static func level5(_ c: Int) -> Float { Float(c * 8 + c >> 2) }

    /// Nearest code: `+ 0.5` then truncation rounds like `rounded()` for every value that is
    /// not clamped to 0 anyway, without the `roundf` call `rounded()` compiles to.
    @inline(__always) static func code(_ value: Float, _ step: Float, _ top: Int) -> Int {
        min(max(Int(value / step + 0.5), 0), top)
    }

    /// Nearest representable colour A (bits 1–15 of the colour word) and its decoded value.
    @inline(__always) static func quantiseA(_ f: SIMD4<Float>, translucentAllowed: Bool) -> (UInt32, SIMD4<Float>) {
        let r = code(f.x, 8.25, 31), g = code(f.y, 8.25, 31), b4 = code(f.z, 17, 15)
        let opaque = SIMD4<Float>(level5(r), level5(g), level5(b4 << 1 | b4 >> 3), 255)
        let opaqueBits = UInt32(0x8000 | r << 10 | g << 5 | b4 << 1)
        guard translucentAllowed else { return (opaqueBits, opaque) }
        let a3 = code(f.w, 34, 7), r4 = code(f.x, 17, 15), g4 = code(f.y, 17, 15), b3 = code(f.z, 255.0 / 7, 7)
        let translucent = SIMD4<Float>(
            level5(r4 << 1 | r4 >> 3), level5(g4 << 1 | g4 >> 3), level5(b3 << 2 | b3 >> 1), Float(34 * a3))
        let dO = opaque - f, dT = translucent - f
        if (dT * dT).sum() < (dO * dO).sum() {
            return (UInt32(a3 << 12 | r4 << 8 | g4 << 4 | b3 << 1), translucent)
        }
        return (opaqueBits, opaque)
    }

    /// Nearest representable colour B (bits 16–31 of the colour word) and its decoded value.
    @inline(__always) static func quantiseB(_ f: SIMD4<Float>, translucentAllowed: Bool) -> (UInt32, SIMD4<Float>) {
        let r = code(f.x, 8.25, 31), g = code(f.y, 8.25, 31), b = code(f.z, 8.25, 31)
        let opaque = SIMD4<Float>(level5(r), level5(g), level5(b), 255)
        let opaqueBits = UInt32(0x8000 | r << 10 | g << 5 | b) << 16
        guard translucentAllowed else { return (opaqueBits, opaque) }
        let a3 = code(f.w, 34, 7), r4 = code(f.x, 17, 15), g4 = code(f.y, 17, 15), b4 = code(f.z, 17, 15)
        let translucent = SIMD4<Float>(
            level5(r4 << 1 | r4 >> 3), level5(g4 << 1 | g4 >> 3), level5(b4 << 1 | b4 >> 3), Float(34 * a3))
        let dO = opaque - f, dT = translucent - f
        if (dT * dT).sum() < (dO * dO).sum() {
            return (UInt32(a3 << 12 | r4 << 8 | g4 << 4 | b4) << 16, translucent)
        }
        return (opaqueBits, opaque)
    }

    @inline(__always) static func load(_ source: UnsafeRawPointer, _ offset: Int) -> SIMD4<Float> {
        SIMD4<Float>(
            SIMD4<UInt8>(
                source.load(fromByteOffset: offset, as: UInt8.self),
                source.load(fromByteOffset: offset + 1, as: UInt8.self),
                source.load(fromByteOffset: offset + 2, as: UInt8.self),
                source.load(fromByteOffset: offset + 3, as: UInt8.self)))
    }

    /// Colours A and B of every word from the extremes of its block along the block's
    /// principal axis, oriented so that B is the brighter (neighbouring words must agree,
    /// or the bilinear upscaling mixes A of one word with B of the next).
    func initialise(_ source: UnsafeRawPointer, layout: PVRTCLayout, hasAlpha: Bool) {
        let bw = layout.format.blockWidth, width = layout.width
        let lastX = layout.wordsWide - 1, lastY = layout.wordsHigh - 1
        var bases = [Int](repeating: 0, count: 4), columns = [Range<Int>](repeating: 0..<bw, count: 4),
            rows = [Range<Int>](repeating: 0..<4, count: 4)
        let orientation = SIMD4<Float>(0.299, 0.587, 0.114, 0.5)
        colourWords.withUnsafeMutableBufferPointer { words in
            valueA.withUnsafeMutableBufferPointer { va in
                valueB.withUnsafeMutableBufferPointer { vb in
                    for wy in 0..<layout.wordsHigh {
                        for wx in 0..<layout.wordsWide {
                            // The blocks whose pixels this word's colours must serve: its own, and for
                            // a border word the block across the wrap (both corners' for a corner word).
                            let partnerX = layout.wordsWide < 2 ? -1 : wx == 0 ? lastX : wx == lastX ? 0 : -1
                            let partnerY = layout.wordsHigh < 2 ? -1 : wy == 0 ? lastY : wy == lastY ? 0 : -1
                            // Of a partner block, only the half next to the wrap blends with this word.
                            let nearX = wx == 0 ? (bw / 2)..<bw : 0..<(bw / 2), nearY = wy == 0 ? 2..<4 : 0..<2
                            var blockCount = 1
                            bases[0] = ((wy * 4) * width + wx * bw) * 4; columns[0] = 0..<bw; rows[0] = 0..<4
                            if partnerX >= 0 {
                                bases[blockCount] = ((wy * 4) * width + partnerX * bw) * 4; columns[blockCount] = nearX;
                                rows[blockCount] = 0..<4
                                blockCount += 1
                            }
                            if partnerY >= 0 {
                                bases[blockCount] = ((partnerY * 4) * width + wx * bw) * 4;
                                columns[blockCount] = 0..<bw; rows[blockCount] = nearY
                                blockCount += 1
                            }
                            if partnerX >= 0 && partnerY >= 0 {
                                bases[blockCount] = ((partnerY * 4) * width + partnerX * bw) * 4;
                                columns[blockCount] = nearX; rows[blockCount] = nearY
                                blockCount += 1
                            }
                            var pixelCount: Float = 0
                            for k in 0..<blockCount { pixelCount += Float(columns[k].count * rows[k].count) }
                            var sum = SIMD4<Float>.zero
                            for k in 0..<blockCount {
                                let base = bases[k]
                                for row in rows[k] {
                                    for column in columns[k] {
                                        sum += Self.load(source, base + (row * width + column) * 4)
                                    }
                                }
                            }
                            let mean = sum / pixelCount
                            var c0 = SIMD4<Float>.zero, c1 = c0, c2 = c0, c3 = c0
                            for k in 0..<blockCount {
                                let base = bases[k]
                                for row in rows[k] {
                                    for column in columns[k] {
                                        let d = Self.load(source, base + (row * width + column) * 4) - mean
                                        c0 += d * d.x; c1 += d * d.y; c2 += d * d.z; c3 += d * d.w
                                    }
                                }
                            }
                            var axis = c0 + c1 + c2 + c3
                            for _ in 0..<3 {
                                axis = c0 * axis.x + c1 * axis.y + c2 * axis.z + c3 * axis.w
                                let scale = max(abs(axis.x), abs(axis.y), abs(axis.z), abs(axis.w))
                                if scale > 1e-12 { axis /= scale }
                            }
                            var lowest = mean, highest = mean
                            let length = (axis * axis).sum().squareRoot()
                            if length > 1e-6 {
                                axis /= length
                                if (axis * orientation).sum() < 0 { axis = -axis }
                                var tMin = Float.greatestFiniteMagnitude, tMax = -Float.greatestFiniteMagnitude
                                for k in 0..<blockCount {
                                    let base = bases[k]
                                    for row in rows[k] {
                                        for column in columns[k] {
                                            let t =
                                                ((Self.load(source, base + (row * width + column) * 4) - mean) * axis)
                                                .sum()
                                            tMin = min(tMin, t); tMax = max(tMax, t)
                                        }
                                    }
                                }
                                lowest = (mean + axis * tMin).clamped(
                                    lowerBound: .zero, upperBound: SIMD4(repeating: 255))
                                highest = (mean + axis * tMax).clamped(
                                    lowerBound: .zero, upperBound: SIMD4(repeating: 255))
                            }
                            let (bitsA, qa) = Self.quantiseA(lowest, translucentAllowed: hasAlpha)
                            let (bitsB, qb) = Self.quantiseB(highest, translucentAllowed: hasAlpha)
                            let index = wy * layout.wordsWide + wx
                            words[index] = bitsA | bitsB
                            va[index] = qa
                            vb[index] = qb
                        }
                    }
                }
            }
        }
    }

    /// `fast` initialisation: colours A and B of every word are the per-channel minimum and
    /// maximum of its block, pulled in by 1/16 of the range (the extremes are rarely hit
    /// by the modulated blend, and the bilinear upscaling spreads them to the neighbours).
    /// Both corners of the bounding box lie on the dark–bright diagonal, so neighbouring
    /// words agree on which colour is the brighter. Cost: about four SIMD min/max a block
    /// row, against three passes of float work for the principal axis.
    func initialiseFromBounds(_ source: UnsafeRawPointer, layout: PVRTCLayout, hasAlpha: Bool) {
        let bw = layout.format.blockWidth, rowBytes = layout.width * 4
        let lastX = layout.wordsWide - 1, lastY = layout.wordsHigh - 1
        colourWords.withUnsafeMutableBufferPointer { words in
            valueA.withUnsafeMutableBufferPointer { va in
                valueB.withUnsafeMutableBufferPointer { vb in
                    for wy in 0..<layout.wordsHigh {
                        for wx in 0..<layout.wordsWide {
                            var low = SIMD16<UInt8>(repeating: 255), high = SIMD16<UInt8>(repeating: 0)
                            @inline(__always) func bound(_ bx: Int, _ by: Int) {
                                let base = source + (by * 4) * rowBytes + bx * bw * 4
                                for row in 0..<4 {
                                    for half in stride(from: 0, to: bw, by: 4) {
                                        let v = base.loadUnaligned(
                                            fromByteOffset: row * rowBytes + half * 4, as: SIMD16<UInt8>.self)
                                        low = pointwiseMin(low, v)
                                        high = pointwiseMax(high, v)
                                    }
                                }
                            }
                            bound(wx, wy)
                            // A border word also bounds the block across the wrap: the upscaling
                            // blends the two into the edge pixels (see `initialise`).
                            let partnerX = layout.wordsWide < 2 ? -1 : wx == 0 ? lastX : wx == lastX ? 0 : -1
                            let partnerY = layout.wordsHigh < 2 ? -1 : wy == 0 ? lastY : wy == lastY ? 0 : -1
                            if partnerX >= 0 { bound(partnerX, wy) }
                            if partnerY >= 0 { bound(wx, partnerY) }
                            if partnerX >= 0 && partnerY >= 0 { bound(partnerX, partnerY) }
                            let low8 = pointwiseMin(low.lowHalf, low.highHalf),
                                high8 = pointwiseMax(high.lowHalf, high.highHalf)
                            let lo = pointwiseMin(low8.lowHalf, low8.highHalf),
                                hi = pointwiseMax(high8.lowHalf, high8.highHalf)
                            let lowest = SIMD4<Float>(Float(lo.x), Float(lo.y), Float(lo.z), Float(lo.w))
                            let highest = SIMD4<Float>(Float(hi.x), Float(hi.y), Float(hi.z), Float(hi.w))
                            let inset = (highest - lowest) * (1.0 / 16)
                            let (bitsA, qa) = Self.quantiseA(lowest + inset, translucentAllowed: hasAlpha)
                            let (bitsB, qb) = Self.quantiseB(highest - inset, translucentAllowed: hasAlpha)
                            let index = wy * layout.wordsWide + wx
                            words[index] = bitsA | bitsB
                            va[index] = qa
                            vb[index] = qb
                        }
                    }
                }
            }
        }
    }
}
