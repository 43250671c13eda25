import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The viewer page and its assets (the map library, its stylesheet and images), read once at
/// start and served from memory by name; a name not in the table is a 404.
///
/// Cost: assets are held whole, each capped at ``TileService/maxAssetBytes``.
extension TileService {
    /// `/`: the viewer page, or a page saying how to install the map library when it is missing.
    public func viewerPage() -> ServedResponse {
        if let assetProblem {
            let html = ViewerPage.missingLibrary(assetProblem)
            return ServedResponse(
                status: 503, contentType: "text/html; charset=utf-8", headers: [("Cache-Control", "no-store")],
                body: Array(html.utf8))
        }
        return ServedResponse(
            contentType: "text/html; charset=utf-8", headers: [("Cache-Control", "no-cache")],
            body: Array(ViewerPage.html.utf8))
    }

    /// `/leaflet/{path}`: a file of the map library, from the table read at start.
    public func asset(_ path: String, ifNoneMatch: String? = nil) -> ServedResponse {
        guard let asset = assets[path] else {
            return .error(
                404, kind: "notFound",
                message: "no asset \(Self.shown(path))"
                    + (assetProblem.map { " (\($0))" } ?? ""))
        }
        if Self.matches(ifNoneMatch, asset.etag) { return notModified(asset.etag) }
        return ServedResponse(
            contentType: asset.contentType, headers: [("ETag", asset.etag), ("Cache-Control", "public, max-age=3600")],
            body: asset.bytes)
    }

    /// Reads Leaflet's files (top level and `images/`) into memory, so that a request never
    /// reaches the file system.
    static func loadAssets(_ directory: String) -> ([String: Asset], String?) {
        var out: [String: Asset] = [:]
        for sub in ["", "images/"] {
            guard let dir = opendir(directory + "/" + sub) else { continue }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                guard let type = contentType(name), !name.hasPrefix(".") else { continue }
                guard let bytes = readSmallFile(directory + "/" + sub + name) else { continue }
                let etag = "\"a" + bytes.withUnsafeBytes { hex16(fnv1a($0)) } + "\""
                out[sub + name] = Asset(bytes: bytes, contentType: type, etag: etag)
            }
        }
        guard out["leaflet.js"] != nil, out["leaflet.css"] != nil else {
            return (
                out,
                "Leaflet not found in \(directory) (leaflet.js and leaflet.css): install Debian's libjs-leaflet "
                    + "(apt-get install libjs-leaflet) or pass --leaflet DIR"
            )
        }
        return (out, nil)
    }

    static func contentType(_ name: String) -> String? {
        if name.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
        if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
        if name.hasSuffix(".png") { return "image/png" }
        if name.hasSuffix(".svg") { return "image/svg+xml" }
        return nil
    }

    static func readSmallFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, 65536) }
            if n < 0 { return nil }
            if n == 0 { return out }
            out.append(contentsOf: chunk[0..<n])
            if out.count > maxAssetBytes { return nil }
        }
    }
}
