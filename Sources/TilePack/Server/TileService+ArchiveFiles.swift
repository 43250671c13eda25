import TilePackCore
import TilePackArchive
import TilePackRegions
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `GET /NAME.pmtiles` (and HEAD): the raw bytes of a PMTiles archive the server draws, with
/// HTTP `Range` (``PackRange``: one range → 206 with `Content-Range`, unsatisfiable → 416), so
/// MapLibre GL JS's `pmtiles://` protocol (or any PMTiles reader over HTTP) reads it directly.
///
/// Only from an open library: there every tile shows, so the whole file gives away nothing a
/// tile route would refuse. A store library has no PMTiles archives (``RegionLibrary``
/// refuses them), and its MBTiles masters are never served whole: purchases gate every tile.
/// The name is looked up in the table made at start (the served archives and their terrain
/// siblings), never joined into a path.
extension TileService {
    /// File name → path of every raw archive `GET /NAME.pmtiles` serves.
    static func servedArchiveFiles(_ library: RegionLibrary, layers: [RegionLibrary.DrawingLayer]) -> [String: String] {
        guard library.kind == .open else { return [:] }
        var files: [String: String] = [:]
        for layer in layers {
            guard let reader = layer.archive as? PMTilesReader else { continue }
            for path in [reader.path] + (reader.terrain.map { [$0.path] } ?? []) {
                files[String(path.split(separator: "/").last ?? Substring(path))] = path
            }
        }
        return files
    }

    /// The file `name` (`montblanc.pmtiles`) or its bytes in `range`.
    /// - Cost: one open and `fstat`; the body is streamed by the HTTP adapter.
    public func archiveFile(
        name: String, head: Bool, range: String?, ifRange: String?, ifNoneMatch: String?
    ) -> PackReply {
        guard let path = archiveFiles[name] else {
            return .served(
                .error(404, kind: "notFound", message: "no PMTiles archive \(Self.shown(name)) is served here"))
        }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        var info = stat()
        guard fd >= 0, fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 else {
            if fd >= 0 { close(fd) }
            return .served(.error(404, kind: "notFound", message: "archive \(Self.shown(name)) is gone"))
        }
        let (modified, _) = ServedPacks.times(info)
        let device = UInt64(truncatingIfNeeded: info.st_dev), inode = UInt64(truncatingIfNeeded: info.st_ino)
        let size = Int64(info.st_size)
        // The file's identity as its ETag: a rename of a new version changes inode and time.
        let etag =
            "\"a\(String(device, radix: 16))-\(String(inode, radix: 16))-\(String(size, radix: 16))-\(modified.tv_sec)\(modified.tv_nsec)\""
        let file = OpenPackFile(
            fd: fd, file: PackFile(path: path, size: size, device: device, inode: inode, etag: etag))
        var headers: [(String, String)] = [
            ("ETag", etag), ("Accept-Ranges", "bytes"), ("Cache-Control", "public, no-cache"),
        ]
        if Self.matches(ifNoneMatch, etag) {
            return .served(ServedResponse(status: 304, contentType: "", headers: headers, body: []))
        }
        let contentType = "application/vnd.pmtiles"
        let first: Int64, length: Int64, status: Int
        switch PackRange.answer(range: range, ifRange: ifRange, size: size, etag: etag) {
        case .bytes(let code, let from, let count, let extra):
            (first, length, status) = (from, count, code)
            headers += extra
        case .refused(let response):
            return .served(response)
        }
        return .file(
            PackFileReply(
                status: status, contentType: contentType, headers: headers, first: first, length: length,
                file: head ? nil : file))
    }
}
