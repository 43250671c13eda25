import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a GeoTIFF could not be written: `subject` is the target path (not the temporary file),
/// `detail` the problem (errno's text included), `code` the kind. Built with the factories named
/// after the codes (`TIFFWriteError.writeFailed(path:errno:)`).
public struct TIFFWriteError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The options describe an image TIFF cannot hold or the writer does not produce.
        public static let invalidOptions = Code("invalidOptions")
        /// The temporary file next to the target could not be created.
        public static let cannotCreate = Code("cannotCreate")
        /// A write to the temporary file failed, e.g. a full disk.
        public static let writeFailed = Code("writeFailed")
        /// The finished temporary file could not be renamed onto the target.
        public static let cannotRename = Code("cannotRename")
        /// zlib refused to compress a block.
        public static let compressionFailed = Code("compressionFailed")
        /// The image passed 4 GiB but classic TIFF was demanded.
        public static let tooLargeForClassicTIFF = Code("tooLargeForClassicTIFF")
    }

    public let code: Code
    /// The file the caller asked for (not the temporary one).
    public let subject: String
    public let detail: String
    /// The error underneath (a zlib failure), if any; not compared by `==`.
    public let cause: (any Error)?

    public init(_ code: Code, path: String, detail: String, cause: (any Error)? = nil) {
        self.code = code
        self.subject = path
        self.detail = detail
        self.cause = cause
    }

    /// Options TIFF cannot hold or the writer does not produce.
    public static func invalidOptions(path: String, _ why: String) -> TIFFWriteError {
        TIFFWriteError(.invalidOptions, path: path, detail: "cannot write GeoTIFF: \(why)")
    }

    /// The temporary file could not be created (`errno`).
    public static func cannotCreate(path: String, errno: Int32) -> TIFFWriteError {
        TIFFWriteError(.cannotCreate, path: path, detail: "cannot create its temporary file: \(message(errno))")
    }

    /// A write failed (`errno`).
    public static func writeFailed(path: String, errno: Int32) -> TIFFWriteError {
        TIFFWriteError(.writeFailed, path: path, detail: "write failed: \(message(errno))")
    }

    /// The temporary file could not be renamed onto the target (`errno`).
    public static func cannotRename(path: String, errno: Int32) -> TIFFWriteError {
        TIFFWriteError(
            .cannotRename, path: path, detail: "cannot rename its temporary file into place: \(message(errno))")
    }

    /// zlib refused to compress a block.
    public static func compressionFailed(path: String, _ failure: any Error) -> TIFFWriteError {
        let why = (failure as? Zlib.Failure)?.detail ?? "\(failure)"
        return TIFFWriteError(.compressionFailed, path: path, detail: "deflate failed: \(why)", cause: failure)
    }

    /// `bytes` past classic TIFF's 4 GiB.
    public static func tooLargeForClassicTIFF(path: String, bytes: UInt64) -> TIFFWriteError {
        TIFFWriteError(
            .tooLargeForClassicTIFF, path: path, detail: "\(bytes) bytes do not fit classic TIFF (4 GiB); allow BigTIFF"
        )
    }

    /// Bad options are the caller's; the rest are the environment's fault.
    public var category: TilePackErrorCategory { code == .invalidOptions ? .invalidArgument : .environment }

    private static func message(_ code: Int32) -> String {
        guard let c = strerror(code) else { return "errno \(code)" }
        return String(cString: c)
    }
}
