import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a GeoTIFF could not be written; `description` names the target path.
public struct TIFFWriteError: TilePackError, Equatable {
    public enum Reason: Sendable, Equatable {
        /// The options describe an image TIFF cannot hold or the writer does not produce.
        case invalidOptions(String)
        /// The temporary file next to the target could not be created (errno).
        case cannotCreate(errno: Int32)
        /// A write to the temporary file failed (errno), e.g. a full disk.
        case writeFailed(errno: Int32)
        /// The finished temporary file could not be renamed onto the target (errno).
        case cannotRename(errno: Int32)
        /// zlib refused to compress a block.
        case compressionFailed(String)
        /// The image passed 4 GiB but classic TIFF was demanded.
        case tooLargeForClassicTIFF(bytes: UInt64)
    }

    /// The file the caller asked for (not the temporary one).
    public var path: String
    public var reason: Reason

    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .invalidOptions(let why): "\(path): cannot write GeoTIFF: \(why)"
        case .cannotCreate(let e): "\(path): cannot create its temporary file: \(Self.message(e))"
        case .writeFailed(let e): "\(path): write failed: \(Self.message(e))"
        case .cannotRename(let e): "\(path): cannot rename its temporary file into place: \(Self.message(e))"
        case .compressionFailed(let why): "\(path): deflate failed: \(why)"
        case .tooLargeForClassicTIFF(let n): "\(path): \(n) bytes do not fit classic TIFF (4 GiB); allow BigTIFF"
        }
    }

    /// Bad options are the caller's; the rest are the environment's fault.
    public var category: TilePackErrorCategory {
        if case .invalidOptions = reason { return .invalidArgument }
        return .environment
    }

    private static func message(_ code: Int32) -> String {
        guard let c = strerror(code) else { return "errno \(code)" }
        return String(cString: c)
    }
}
