import ArgumentParser
import TilePack

/// `tilepack info FILE`: what the reader sees in a TIFF, for humans or as JSON.
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract:
            """
            Describe a TIFF/GeoTIFF (size, samples, layout, compression, georeferencing), a mosaic, an archive or \
            a pack.
            """,
        discussion: """
            Reads the file with tilepack's own TIFF reader. Files it cannot decode are reported \
            on stderr in one line naming the file and the problem, with exit status 2. Several \
            files, a folder or a .vrt are described as the mosaic `tilepack build` would read: \
            union bounds, resolution, CRS(es) and the files. An .mbtiles file (an archive, a \
            pack or a delta) is described by its container, format, codec, zooms, bounds and \
            centre, tiles and bytes per zoom, elevation, sources with their SHA-256 and build \
            options; a .pmtiles archive likewise, with its header's layout and its terrain \
            sibling; a pack also by its manifest (beside it) and whether the \
            manifest's signature is valid, invalid, unverified (no trust file) or absent.
            """
    )

    @Argument(help: "The TIFF or GeoTIFF file to describe; or several, a folder, or a .vrt (a mosaic).")
    var files: [String]

    @Flag(name: .long, help: "Print one JSON object instead of text.")
    var json = false

    @Flag(name: .long, help: "Also decode every pixel and print SHA-256 digests of the image and of each band.")
    var checksum = false

    func validate() throws {
        if files.isEmpty { throw ValidationError("give a TIFF, several, a folder or a .vrt") }
    }

    @Option(
        help:
            """
            Trust file whose publisher keys check a pack's manifest (default: the default trust file when there \
            is one).
            """
    )
    var trust: String?

    @OptionGroup var projDB: ProjDBOptions

    func run() throws {
        // An archive by its content (or its name, so a damaged one gets the archive reader's words).
        if files.count == 1,
            TileArchiveKind(sniffing: files[0]) != nil || files[0].hasSuffix(".mbtiles")
                || files[0].hasSuffix(".pmtiles")
        {
            try exitingOnError { try describeArchive(files[0]) }
            return
        }
        let info: SourceInfo
        let registry = try projDB.registry()
        do {
            let input = try RegionInput.resolve(files)
            guard case .file(let file) = input else {
                if checksum { throw ValidationError("--checksum describes one file, not a mosaic") }
                let mosaic = try MosaicInfo(input: input, registry: registry)
                print(json ? try mosaic.json : mosaic.text)
                return
            }
            info = SourceInfo(
                tiff: try TIFFInfo(file: try TIFFFile(path: file), checksum: checksum), registry: registry)
        } catch let error as any TilePackError {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
        print(json ? try info.json : info.text)
    }
}

extension InfoCommand {
    /// An archive, pack or delta: ``ArchiveReport`` and, for packs and deltas, the manifest.
    func describeArchive(_ path: String) throws {
        let report = try ArchiveReport(path: path)
        let pack =
            report.kind == "archive"
            ? nil
            : PackCheck(
                packPath: path, publisherKeys: try RegionLibraryOptions.trustAnchors(file: trust)?.publisherKeys)
        if json {
            print(try JSONOutput.string(ArchiveInfoOutput(report: report, pack: pack)))
            return
        }
        var lines = [
            "\(path): \(report.kind), \(report.container), format \(report.format)"
                + (report.codec.map { ", codec \($0)" } ?? "") + (report.codecLevel.map { " (\($0))" } ?? "")
                + ", \(report.tileSize) px tiles"
        ]
        if !report.name.isEmpty { lines.append("name \(report.name)") }
        if let lo = report.minzoom, let hi = report.maxzoom { lines.append("zooms \(lo)–\(hi)") }
        if let b = report.bounds { lines.append("bounds \(b.map { String($0) }.joined(separator: ", "))") }
        if let c = report.center, c.count == 3 { lines.append("centre \(c[0]), \(c[1]) at zoom \(Int(c[2]))") }
        lines.append("tiles \(report.tiles.count), \(ByteSize.format(report.tiles.bytes))")
        for z in report.tiles.perZoom { lines.append("  z\(z.z): \(z.tiles) tiles, \(ByteSize.format(z.bytes))") }
        if let e = report.elevation {
            var line = "elevation \(e.rows) rows"
            if let lo = e.minzoom, let hi = e.maxzoom { line += " at z\(lo)–\(hi), \(ByteSize.format(e.bytes))" }
            let how = [e.valueKind, e.encoding, e.precision.map { "step \($0)" }].compactMap { $0 }
            if !how.isEmpty { line += " (\(how.joined(separator: ", ")))" }
            lines.append(line)
        }
        if let p = report.pmtiles {
            lines.append(
                """
                pmtiles: \(p.clustered ? "clustered" : "not clustered"), directories \(p.internalCompression), tiles \
                \(p.tileCompression), tile type \(p.tileType); \(p.addressedTiles) addressed tiles, \(p.tileEntries) \
                entries, \(p.tileContents) distinct
                """)
            if let terrain = p.terrain { lines.append("terrain \(terrain)") }
        }
        for source in report.sources { lines.append("source \(source.file) sha256 \(source.sha256)") }
        if let options = report.buildOptions, let text = try? JSONOutput.string(options) {
            lines.append("build options \(text)")
        }
        for layer in report.layers ?? [] {
            lines.append("layer \(layer.archive): \(layer.codec ?? "?"), \(layer.tileSize) px")
        }
        if let a = report.attribution, !a.isEmpty { lines.append("attribution: \(a)") }
        if let l = report.license, !l.isEmpty { lines.append("licence: \(l)") }
        if let pack {
            lines.append(
                "manifest \(pack.manifestPath): signature \(pack.signature)" + (pack.problem.map { " (\($0))" } ?? ""))
            if let m = pack.manifest {
                lines.append(
                    """
                    pack \(m.packID) v\(m.version), product \(m.productID ?? "none (free)"), released \
                    \(m.releasedAt) ms, reader ≥ \(m.minReaderVersion)
                    """
                )
                lines.append(
                    "file SHA-256 " + (pack.sha256Matches == true ? "is the manifest's" : "differs from the manifest's")
                        + ", tile index "
                        + (pack.tileIndexMatches == true ? "is the manifest's" : "differs from the manifest's"))
            }
        }
        print(lines.joined(separator: "\n"))
    }
}

/// `info --json` of an archive: the report's fields, and `pack` for packs and deltas.
struct ArchiveInfoOutput: Encodable {
    let report: ArchiveReport
    let pack: PackCheck?

    enum Key: String, CodingKey { case pack }

    func encode(to encoder: any Encoder) throws {
        try report.encode(to: encoder)
        var c = encoder.container(keyedBy: Key.self)
        try c.encodeOrNull(pack, forKey: .pack)
    }
}
