import TilePackCore
import TilePackGeoTIFF
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What `tilepack build` (and `info`) was given, resolved: one GeoTIFF, several GeoTIFFs (a
/// list, or every `.tif`/`.tiff` of a folder, sorted by name), or a GDAL VRT.
///
/// One plain file stays ``file(_:)`` and builds exactly as before mosaics existed.
/// - Cost: one `stat` per path and one directory listing per folder; opens no file.
public enum RegionInput: Sendable, Equatable {
    case file(String)
    /// GeoTIFFs in mosaic order; `label` names the result (the folder, else the first file).
    case files([String], label: String)
    case vrt(String)

    /// Resolves command-line paths.
    /// - Throws: ``InputFileError`` naming the path: missing, an empty folder, or a VRT given
    ///   with other paths.
    public static func resolve(_ paths: [String]) throws -> RegionInput {
        guard let first = paths.first else { throw BuildError.invalidOption("no source given") }
        if paths.count == 1 {
            if isDirectory(first) {
                let tiffs = try geoTIFFs(in: first)
                return .files(tiffs, label: first)
            }
            return isVRT(first) ? .vrt(first) : .file(first)
        }
        var all: [String] = []
        for p in paths {
            if isVRT(p) { throw InputFileError(path: p, detail: "a VRT is a mosaic by itself; give it alone") }
            if isDirectory(p) { all += try geoTIFFs(in: p) } else { all.append(p) }
        }
        return .files(all, label: first)
    }

    /// The inputs of `build --each`, each to be built on its own: the paths given, a folder
    /// replaced by its `.tif`/`.tiff` files (by name), a VRT kept whole.
    /// - Throws: ``InputFileError`` naming a folder that cannot be listed or holds no GeoTIFF.
    /// - Cost: one `stat` per path and one directory listing per folder.
    public static func each(_ paths: [String]) throws -> [String] {
        guard !paths.isEmpty else { throw BuildError.invalidOption("no source given") }
        var inputs: [String] = []
        for p in paths {
            if isDirectory(p) { inputs += try geoTIFFs(in: p) } else { inputs.append(p) }
        }
        return inputs
    }

    /// Every path the build reads pixels from (a VRT's sources are listed by the mosaic).
    public var paths: [String] {
        switch self {
        case .file(let p), .vrt(let p): [p]
        case .files(let ps, _): ps
        }
    }

    /// The name that default archive names and region names derive from.
    public var label: String {
        switch self {
        case .file(let p), .vrt(let p): p
        case .files(_, let label): label
        }
    }

    static func isVRT(_ path: String) -> Bool { path.lowercased().hasSuffix(".vrt") }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    /// The folder's `.tif`/`.tiff` files (any case), sorted by name so builds are repeatable.
    static func geoTIFFs(in folder: String) throws -> [String] {
        guard let dir = opendir(folder) else {
            throw InputFileError(path: folder, detail: "cannot list the folder: \(String(cString: strerror(errno)))")
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            let lower = name.lowercased()
            guard !name.hasPrefix("."), lower.hasSuffix(".tif") || lower.hasSuffix(".tiff") else { continue }
            names.append(name)
        }
        guard !names.isEmpty else {
            throw InputFileError(path: folder, detail: "the folder holds no .tif or .tiff files")
        }
        let prefix = folder.hasSuffix("/") ? folder : folder + "/"
        return names.sorted().map { prefix + $0 }
    }
}
