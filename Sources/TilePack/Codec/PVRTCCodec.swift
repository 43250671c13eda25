import TilePackCore
import Synchronization

/// PVRTC1 as a ``TileCodec``: `encode` returns the raw words in Morton order (what
/// `glCompressedTexImage2D` and Metal take unchanged), `decode` turns them back into RGBA8.
///
/// Encoders and decoders own large scratch buffers, so the codec keeps a small pool of them:
/// after warm-up, a pipeline calling it from a fixed set of threads does not allocate
/// scratch (only the returned arrays).
public struct PVRTCCodec: TileCodec {
    public let format: PVRTCFormat
    public let level: PVRTCEncoder.Level
    private let encoders: ScratchPool<PVRTCEncoder>
    private let decoders: ScratchPool<PVRTCDecoder>

    public var name: String { format.rawValue }

    public init(format: PVRTCFormat = .pvrtc4, level: PVRTCEncoder.Level = .quality) {
        self.format = format
        self.level = level
        encoders = ScratchPool { PVRTCEncoder() }
        decoders = ScratchPool { PVRTCDecoder() }
    }

    /// Encodes one RGBA8 image; throws ``CodecError`` for a size PVRTC cannot hold or a wrong byte count.
    public func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        let encoder = encoders.take()
        defer { encoders.give(encoder) }
        return try encoder.encode(rgba: rgba, width: width, height: height, format: format, level: level)
    }

    /// Decodes words; throws ``CodecError`` when `data` is not exactly the size's byte count.
    public func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        let decoder = decoders.take()
        defer { decoders.give(decoder) }
        return try decoder.decode(data, format: format, width: width, height: height)
    }
}

/// A few reusable non-thread-safe workers handed out one caller at a time.
/// Sendable because every access to `idle` happens under `lock`, and a worker is owned
/// by exactly one caller between `take` and `give`.
final class ScratchPool<Worker>: @unchecked Sendable {
    private let lock = Mutex(())
    private var idle: [Worker] = []
    private let make: @Sendable () -> Worker
    private let limit = 8

    init(make: @escaping @Sendable () -> Worker) { self.make = make }

    func take() -> Worker {
        let worker: Worker? = lock.withLock { _ in idle.popLast() }
        return worker ?? make()
    }

    func give(_ worker: Worker) {
        lock.withLock { _ in if idle.count < limit { idle.append(worker) } }
    }
}
