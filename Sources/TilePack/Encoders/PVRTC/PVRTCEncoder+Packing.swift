import TilePackCore
import TilePackCodec

// Output: colours and modulation packed into 64-bit words in Morton order.
// The encoder's levels and per-image driver are in PVRTCEncoder.swift; docs/PVRTC.md tells the algorithm.
extension PVRTCEncoder {
    /// Modulation code of a weight byte (mode 0: 0,3,5,8 → 0…3; punch-through: 0,4,4+punch,8 → 0…3).
    static let codeOfWeight: [UInt32] = (0..<256).map { w in
        switch w {
        case 3, 4: 1;
        case 5, 0x84: 2;
        case 8: 3;
        default: 0
        }
    }

    func pack(layout: PVRTCLayout, into words: UnsafeMutableRawBufferPointer) {
        let morton = PVRTCMorton(wordsWide: layout.wordsWide, wordsHigh: layout.wordsHigh)
        let bw = layout.format.blockWidth, width = layout.width
        precondition(weights.count >= width * layout.height && colourWords.count >= layout.wordsWide * layout.wordsHigh)
        Self.codeOfWeight.withUnsafeBufferPointer { code in
            weights.withUnsafeBufferPointer { weight in
                colourWords.withUnsafeBufferPointer { colours in
                    morton.xPart.withUnsafeBufferPointer { xPart in
                        morton.yPart.withUnsafeBufferPointer { yPart in
                            for wy in 0..<layout.wordsHigh {
                                for wx in 0..<layout.wordsWide {
                                    let base = wy * 4 * width + wx * bw
                                    var modulation: UInt32 = 0
                                    if bw == 4 {
                                        for row in 0..<4 {
                                            let p = base + row * width
                                            let bits =
                                                code[Int(weight[p])] | code[Int(weight[p + 1])] << 2
                                                | code[Int(weight[p + 2])] << 4 | code[Int(weight[p + 3])] << 6
                                            modulation |= bits << (8 * UInt32(row))
                                        }
                                    } else {
                                        for row in 0..<4 {
                                            for column in 0..<8 where weight[base + row * width + column] == 8 {
                                                modulation |= 1 << UInt32(row * 8 + column)
                                            }
                                        }
                                    }
                                    let offset = (xPart[wx] | yPart[wy]) * 8
                                    words.storeBytes(of: modulation.littleEndian, toByteOffset: offset, as: UInt32.self)
                                    words.storeBytes(
                                        of: colours[wy * layout.wordsWide + wx].littleEndian, toByteOffset: offset + 4,
                                        as: UInt32.self)
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
