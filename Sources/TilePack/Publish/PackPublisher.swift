import TilePackCore
import TilePackCodec
import TilePackEncoders
import TilePackArchive
import TilePackRegions
import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `tilepack pack`: from a library's signed catalog and master archives, one pack per product
/// (``PackPlan``) with its signed manifest, into a packs directory; with the previous packs
/// directory, the next versions and the deltas from the previous ones.
///
/// Versions: without `previous`, every pack is version 1. With it, a pack whose tile index
/// digest is unchanged keeps its previous version (its file, manifest and deltas are carried
/// over as they were); a changed one becomes version N+1 with a delta from N, and the deltas
/// into N are carried over, so a device at N−2 can take two deltas (or a full download,
/// whichever the server lists as smaller). A codec change writes no delta: a format change is a
/// full update.
///
/// Cost: see ``PackCutter``; plus one SHA-256 pass over each pack written and, per changed
/// pack, one delta (a merge of two tile indexes).
public struct PackPublisher {
    public struct Options: Sendable {
        public var libraryDirectory: String
        public var outputDirectory: String
        public var previousDirectory: String?
        public var key: Curve25519.Signing.PrivateKey
        /// Data licence when the masters record none (`license` metadata).
        public var license: String?
        /// Credit when the masters record none (`attribution` metadata).
        public var attribution: String?
        public var level: PVRTCEncoder.Level = .quality
        /// ms since 1970: `released_at` of new versions.
        public var now: Int64

        public init(
            libraryDirectory: String, outputDirectory: String, previousDirectory: String? = nil,
            key: Curve25519.Signing.PrivateKey, license: String? = nil, attribution: String? = nil, now: Int64
        ) {
            self.libraryDirectory = libraryDirectory; self.outputDirectory = outputDirectory
            self.previousDirectory = previousDirectory; self.key = key; self.license = license
            self.attribution = attribution; self.now = now
        }
    }

    /// What happened to one pack.
    public struct Publication: Sendable, Encodable {
        public var manifest: PackManifest
        /// `new` (version 1), `updated` (N+1, delta written), `unchanged` (carried over),
        /// `reformatted` (N+1, codec changed: no delta).
        public var change: String
        public var wholeTiles: Int
        public var maskedTiles: Int
        /// The delta written from the previous version, and its size.
        public var deltaFrom: Int?
        public var deltaBytes: Int64?

        enum CodingKeys: String, CodingKey {
            case manifest, change, wholeTiles = "whole_tiles", maskedTiles = "masked_tiles"
            case deltaFrom = "delta_from", deltaBytes = "delta_bytes"
        }
    }

    public let options: Options

    public init(_ options: Options) { self.options = options }

    /// Writes every pack. `progress` gets one line per pack.
    /// - Throws: ``PackError`` (or ``CatalogError`` for a catalog that does not verify with
    ///   the key's public half, or sells zooms no archive holds).
    public func run(progress: (String) -> Void = { _ in }) throws -> [Publication] {
        let o = options
        let dir = o.libraryDirectory.hasSuffix("/") ? String(o.libraryDirectory.dropLast()) : o.libraryDirectory
        let out = o.outputDirectory.hasSuffix("/") ? String(o.outputDirectory.dropLast()) : o.outputDirectory
        if let previous = o.previousDirectory, Self.sameDirectory(previous, out) {
            throw PackError(
                .invalidInput, subject: "--previous", "is the output directory: write the new packs elsewhere")
        }
        let publicKey = JWK(privateKey: o.key)
        let (catalog, _) = try SignedCatalog.load(libraryDirectory: dir, publisherKeys: [publicKey])
        let catalogPath = dir + "/" + SignedCatalog.fileName

        var masters: [String: MBTilesReader] = [:]
        for name in Set(catalog.products.flatMap(\.archives)) {
            masters[name] = try MBTilesReader(path: dir + "/" + name)
        }
        var held: [String: ClosedRange<Int>] = [:]
        for (name, reader) in masters { held[name] = reader.zoomRange }
        if let error = catalog.unheldZoomsError(archiveZooms: held, path: catalogPath) { throw error }

        let credit =
            Self.joined(masters.values.compactMap { $0.metadata[MBTilesMetadata.Key.attribution] }) ?? o.attribution
        let license = Self.joined(masters.values.compactMap { $0.metadata["license"] }) ?? o.license
        guard let license else {
            throw PackError(
                .invalidInput, subject: "--license",
                "the master archives record no data licence (metadata `license`): say which with --license TEXT")
        }

        do { try RegionFiles.makeDirectories(out) } catch { throw PackError(.io, subject: out, error.detail) }
        var publications: [Publication] = []
        for plan in try PackPlan.plans(for: catalog, catalogPath: catalogPath) {
            guard
                let publication = try publish(
                    plan, catalog: catalog, masters: masters, out: out,
                    attribution: credit ?? "", license: license)
            else {
                progress("\(plan.packID): no tiles (skipped)")
                continue
            }
            let m = publication.manifest
            progress(
                """
                \(m.packID) v\(m.version): \(publication.wholeTiles + publication.maskedTiles) tiles \
                (\(publication.maskedTiles) cut at the edge), 
                """
                    + "\(ByteSize.format(Int(m.totalBytes)))"
                    + " (\(publication.change)"
                    + (publication.deltaBytes.map { ", delta \(ByteSize.format(Int($0)))" } ?? "") + ")")
            publications.append(publication)
        }
        return publications
    }

    private func publish(
        _ plan: PackPlan, catalog: Catalog, masters: [String: MBTilesReader], out: String,
        attribution: String, license: String
    ) throws -> Publication? {
        let o = options
        let cutter = PackCutter(plan: plan, masters: masters, level: o.level)
        let packPath = out + "/" + PackManifest.packFileName(plan.packID)
        let layers = try cutter.layerInfos()
        var metadata: [String: String] = [
            MBTilesMetadata.Key.name: plan.productID.flatMap { catalog.product(id: $0)?.title } ?? "Free overview",
            MBTilesMetadata.Key.type: "baselayer",
            "attribution": attribution, "license": license,
        ]
        if let first = layers.first {
            for key in [
                MBTilesMetadata.Key.format, MBTilesMetadata.Key.codec, MBTilesMetadata.Key.tileSize,
                MBTilesMetadata.Key.payloadCompression, MBTilesMetadata.Key.elevation,
                MBTilesMetadata.Key.elevationEncoding,
                MBTilesMetadata.Key.elevationPrecision, MBTilesMetadata.Key.formatVersion,
            ] {
                if let value = first.metadata[key] { metadata[key] = value }
            }
        }
        let bounds =
            plan.bounds ?? layers.compactMap { masters[$0.archive]?.bounds }.reduce(nil) { $0?.union($1) ?? $1 }
        if let b = bounds { metadata[MBTilesMetadata.Key.bounds] = "\(b.west),\(b.south),\(b.east),\(b.north)" }

        let writer = try PackWriter(path: packPath, layers: layers, metadata: metadata)
        let counts: PackCutter.Counts
        let stats: PackStatistics
        do {
            counts = try cutter.write(into: writer)
            guard counts.wholeTiles + counts.maskedTiles > 0 else { writer.abandon(); return nil }
            stats = try writer.finish()
        } catch {
            writer.abandon()
            throw error
        }
        let fileHash: String, size: Int64
        do {
            fileHash = try FileDigest.sha256(path: packPath)
            size = Int64(try Self.fileSize(packPath))
        } catch { throw PackError(.io, subject: packPath, error.detail) }

        let archives: [PackManifest.Archive] = layers.compactMap { layer in
            guard let zooms = counts.layerZooms[layer.archive] else { return nil }
            return PackManifest.Archive(
                name: layer.archive, sha256: catalog.archiveSHA256[layer.archive] ?? "",
                minzoom: zooms.lowerBound, maxzoom: zooms.upperBound,
                codec: layer.metadata[MBTilesMetadata.Key.codec] ?? layer.metadata[MBTilesMetadata.Key.format] ?? "")
        }
        var manifest = PackManifest(
            packID: plan.packID, productID: plan.productID, version: 1, releasedAt: o.now,
            minReaderVersion: PackSchema.readerVersion, archives: archives,
            bounds: bounds.map { [$0.west, $0.south, $0.east, $0.north] } ?? [-180, -85.0511, 180, 85.0511],
            perZoom: stats.perZoom.map { PackManifest.ZoomCount(z: $0.z, tiles: $0.tiles, bytes: $0.bytes) },
            totalBytes: size, sha256: fileHash, tileIndexSHA256: stats.indexDigest,
            attribution: attribution, license: license)

        var change = "new"
        var deltaFrom: Int?, deltaBytes: Int64?
        if let previousDir = o.previousDirectory {
            let prevManifestPath = previousDir + "/" + PackManifest.manifestFileName(plan.packID)
            let prevPackPath = previousDir + "/" + PackManifest.packFileName(plan.packID)
            if Self.exists(prevManifestPath) {
                let (previous, previousJWS) = try SignedPackManifest.load(
                    path: prevManifestPath, publisherKeys: [JWK(privateKey: o.key)])
                if previous.tileIndexSHA256 == manifest.tileIndexSHA256 {
                    // Unchanged: the previous version as it was (its file, manifest, deltas).
                    try Self.copy(prevPackPath, to: packPath)
                    try Self.writeText(previousJWS, to: out + "/" + PackManifest.manifestFileName(plan.packID))
                    try carryDeltas(plan.packID, from: previousDir, to: out, upTo: previous.version)
                    return Publication(
                        manifest: previous, change: "unchanged", wholeTiles: counts.wholeTiles,
                        maskedTiles: counts.maskedTiles, deltaFrom: nil, deltaBytes: nil)
                }
                manifest.version = previous.version + 1
                try carryDeltas(plan.packID, from: previousDir, to: out, upTo: previous.version)
                let codecs = { (m: PackManifest) in m.archives.map { "\($0.name)=\($0.codec)" } }
                if codecs(previous) == codecs(manifest) {
                    let deltaPath =
                        out + "/"
                        + PackManifest.deltaFileName(plan.packID, from: previous.version, to: manifest.version)
                    _ = try PackDelta.write(
                        old: prevPackPath, new: packPath, output: deltaPath, packID: plan.packID,
                        from: previous.version, to: manifest.version)
                    deltaFrom = previous.version
                    deltaBytes = Int64(try Self.fileSize(deltaPath))
                    change = "updated"
                } else {
                    change = "reformatted"
                }
            }
        }
        let jws = try SignedPackManifest.sign(manifest, key: o.key)
        try Self.writeText(jws, to: out + "/" + PackManifest.manifestFileName(plan.packID))
        return Publication(
            manifest: manifest, change: change, wholeTiles: counts.wholeTiles, maskedTiles: counts.maskedTiles,
            deltaFrom: deltaFrom, deltaBytes: deltaBytes)
    }

    /// Copies `<id>.v<a>-v<b>.delta.mbtiles` for every b ≤ `version` from `from` to `to`.
    private func carryDeltas(_ packID: String, from: String, to: String, upTo version: Int) throws {
        guard version >= 2 else { return }
        for b in 2...version {
            let name = PackManifest.deltaFileName(packID, from: b - 1, to: b)
            if Self.exists(from + "/" + name) { try Self.copy(from + "/" + name, to: to + "/" + name) }
        }
    }

    // MARK: - Files

    private static func joined(_ values: [String]) -> String? {
        var seen: [String] = []
        for v in values.map({ $0.split(whereSeparator: \.isNewline).joined(separator: " ") })
        where !v.isEmpty && !seen.contains(v) {
            seen.append(v)
        }
        return seen.isEmpty ? nil : seen.sorted().joined(separator: "; ")
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    private static func sameDirectory(_ a: String, _ b: String) -> Bool {
        var sa = stat(), sb = stat()
        guard stat(a, &sa) == 0, stat(b, &sb) == 0 else { return a == b }
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino
    }

    static func fileSize(_ path: String) throws(InputFileError) -> Int {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw InputFileError(path: path, detail: "cannot be read (errno \(errno))")
        }
        return Int(info.st_size)
    }

    private static func writeText(_ text: String, to path: String) throws(PackError) {
        do { try RegionFiles.writeAtomically(path: path, bytes: Array((text + "\n").utf8), mode: 0o644) } catch {
            throw PackError(.io, subject: path, error.detail)
        }
    }

    /// Copies a regular file through a temporary file and a rename (``ArchiveFile/copy(_:to:)``).
    static func copy(_ source: String, to target: String) throws(PackError) {
        let temporary = target + ".tmp-\(getpid())"
        do {
            try ArchiveFile.copy(source, to: temporary)
        } catch {
            unlink(temporary)
            throw PackError(.io, subject: error.subject, error.detail)
        }
        guard rename(temporary, target) == 0 else {
            let code = errno
            unlink(temporary)
            throw PackError(.io, subject: target, "cannot be renamed into place (errno \(code))")
        }
    }
}
