import TilePackCore

/// A GPU tile as an archive stores it, back to the raw payload the GPU takes: the one place
/// that tells the two stored forms apart, for the tile store (into its buffers) and the
/// array-returning decoders alike.
///
/// - A blob that starts with the KTX2 identifier is a KTX2 file (archives since `format`
///   `image/ktx2`): parsed, checked against the archive's format and tile size, its level
///   copied or inflated.
/// - Anything else is the older form: the raw payload when the blob has exactly its size,
///   else a zlib stream that must inflate to exactly that size. A raw payload that happened to
///   start with the 12 identifier bytes would be misread; no codec tilepack ships writes one
///   (ASTC block 0xAB 0x4B… and PVRTC words are not that prefix in practice), and KTX2 then
///   refuses it rather than showing garbage.
enum StoredGPUTile {
    /// Writes the payload of `stored` into `payload` (the raw byte count of `format` at
    /// `width` × `height`).
    /// - Throws: ``CodecError`` naming what is wrong with the blob.
    /// - Cost: parsing O(1); one copy or one inflate with `inflater`; no allocation.
    static func unwrap(
        _ stored: UnsafeRawBufferPointer, into payload: UnsafeMutableRawBufferPointer, format: KTX2Format, width: Int,
        height: Int,
        inflater: Zlib.Inflater
    ) throws {
        if KTX2Header.starts(stored) {
            let texture = try KTX2Texture(parsing: stored, format: format, width: width, height: height)
            try texture.unpackLevel(of: stored, into: payload, inflater: inflater)
            return
        }
        let raw = payload.count
        if stored.count == raw {
            payload.copyMemory(from: stored)
            return
        }
        do { try inflater.inflateExactly(stored, into: payload) } catch {
            throw CodecError.byteCount(what: "\(format.name) payload (\(error))", expected: raw, actual: stored.count)
        }
    }
}
