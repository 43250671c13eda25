import TilePackCore
import TilePackCodec
import TilePackArchive

/// The exact pixels of one finished tile, as its parent needs them: RGBA8 and, for elevation
/// builds, metres. What a journal keeps so that a resumed build or a shard merge makes the
/// same parents as one uninterrupted build: the archive's own tiles are lossy (PVRTC, ASTC)
/// and could not give these back.
public struct TilePixels: Sendable, Equatable {
    public var rgba: [UInt8]
    public var metres: [Float]?

    public init(rgba: [UInt8], metres: [Float]?) {
        self.rgba = rgba
        self.metres = metres
    }

    /// Lossless payload: version byte 1, flags (bit 0: metres follow), the RGBA's zlib
    /// stream length (UInt32 little-endian), the RGBA zlib stream, then the metres'
    /// little-endian Float32 bit patterns as a zlib stream (NaN payloads kept).
    /// - Cost: one zlib level-1 pass over 256 KiB (+256 KiB of metres), ~2 ms: one per
    ///   block root, against the block's 85 tile encodes.
    public func payload() throws -> [UInt8] {
        let colour = try Zlib.deflate(rgba, level: 1)
        guard let colourCount = UInt32(exactly: colour.count) else { preconditionFailure("tile RGBA over 4 GiB") }
        var out = LittleEndianBytes()
        out.append(UInt8(1))
        out.append(UInt8(metres == nil ? 0 : 1))
        out.append(colourCount)
        out.append(contentsOf: colour)
        if let metres {
            var bits = [UInt8]()
            bits.reserveCapacity(metres.count * 4)
            for m in metres {
                let b = m.bitPattern
                bits.append(UInt8(truncatingIfNeeded: b)); bits.append(UInt8(truncatingIfNeeded: b >> 8))
                bits.append(UInt8(truncatingIfNeeded: b >> 16)); bits.append(UInt8(truncatingIfNeeded: b >> 24))
            }
            out.append(contentsOf: try Zlib.deflate(bits, level: 1))
        }
        return out.bytes
    }

    /// Decodes ``payload()`` of a `size`×`size` tile; nil when the bytes are not one (a
    /// damaged or foreign file: the caller names it).
    public init?(payload: [UInt8], size: Int) {
        guard payload.count >= 6, payload[0] == 1, payload[1] <= 1 else { return nil }
        let colourCount = Int(payload[2]) | Int(payload[3]) << 8 | Int(payload[4]) << 16 | Int(payload[5]) << 24
        guard colourCount <= payload.count - 6 else { return nil }
        let pixels = size * size
        guard let rgba = try? Zlib.inflate(Array(payload[6..<(6 + colourCount)]), limit: pixels * 4),
            rgba.count == pixels * 4
        else { return nil }
        var metres: [Float]? = nil
        if payload[1] == 1 {
            guard let bits = try? Zlib.inflate(Array(payload[(6 + colourCount)...]), limit: pixels * 4),
                bits.count == pixels * 4
            else { return nil }
            metres = bits.withUnsafeBufferPointer { b in
                (0..<pixels).map { i in
                    let o = i * 4
                    return Float(
                        bitPattern: UInt32(b[o]) | UInt32(b[o + 1]) << 8 | UInt32(b[o + 2]) << 16 | UInt32(b[o + 3])
                            << 24)
                }
            }
        } else {
            guard colourCount == payload.count - 6 else { return nil }
        }
        self.init(rgba: rgba, metres: metres)
    }
}

/// Where a build records the tiles whose whole planned subtree is written, with their
/// ``TilePixels``, and where a resumed build finds them (see ``TileBuilder/run(sink:journal:shard:progress:)``).
/// The MBTiles writer is one, in the same transactions as the tiles.
public protocol BuildJournal: AnyObject {
    /// Tiles an interrupted run finished: the resumed run skips their subtrees.
    var finishedRoots: Set<TileID> { get }
    /// The pixels recorded for a finished root (nil: the tile is empty).
    func finishedPixels(_ root: TileID) throws -> TilePixels?
    /// Records `root` finished: everything below it and itself has gone to the sink.
    func recordFinished(_ root: TileID, pixels: TilePixels?) throws
}

extension MBTilesWriter: BuildJournal {
    public func finishedPixels(_ root: TileID) throws -> TilePixels? {
        guard let stored = try rootPayload(root) else {
            throw ArchiveError(
                path: temporaryPath, code: .damaged, detail: "journal has no pixels for finished tile \(root)")
        }
        guard let payload = stored else { return nil }
        guard let pixels = TilePixels(payload: payload, size: metadata.tileSize) else {
            throw ArchiveError(
                path: temporaryPath, code: .damaged, detail: "journal pixels of tile \(root) do not decode")
        }
        return pixels
    }

    public func recordFinished(_ root: TileID, pixels: TilePixels?) throws {
        try recordRoot(root, payload: try pixels?.payload())
    }
}
