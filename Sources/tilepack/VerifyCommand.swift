import ArgumentParser
import TilePack

/// `tilepack verify PACK_OR_ARCHIVE`: every tile against its hash and its codec.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract:
            """
            Check a pack (every tile's hash against the signed manifest, every tile decodes) or an archive \
            (SQLite integrity, every tile decodes; a PMTiles archive: its directories, every tile and every \
            elevation tile of its terrain sibling decode).
            """,
        discussion: """
            A pack is checked against <pack_id>.manifest.jws beside it: the signature (with the \
            trust file's publisher keys; --trust, else the default trust file), then the file's \
            SHA-256 or, for a pack updated by a delta, its tile index digest, then every tile and \
            elevation row against the index hash and its codec. Exit 0 when all holds, 2 at the \
            first problem (named on stderr).
            """)

    @Argument(help: "A pack (<pack_id>.mbtiles), a delta, or an MBTiles or PMTiles archive.")
    var file: String

    @Option(
        help: "Trust file whose publisher keys check the manifest (default: the default trust file when there is one).")
    var trust: String?

    func run() throws {
        try exitingOnError {
            let report = try ArchiveReport(path: file)
            if report.container == "pmtiles" {
                let checked = try PMTilesReader(path: file).decodeAllTiles()
                print(
                    """
                    \(file): ok: PMTiles directories in order, \(checked.tiles) tiles and \(checked.elevationRows) \
                    elevation tiles decode
                    """
                )
                return
            }
            guard report.kind != "archive" else {
                let reader = try MBTilesReader(path: file)
                try reader.verifyIntegrity()
                let checked = try reader.decodeAllTiles()
                print(
                    """
                    \(file): ok: SQLite integrity, \(checked.tiles) tiles and \(checked.elevationRows) elevation \
                    rows decode
                    """
                )
                return
            }
            let keys = try RegionLibraryOptions.trustAnchors(file: trust)?.publisherKeys
            let stats = try PackReader(path: file).verifyAll(decode: true)
            var notes: [String] = []
            if report.kind == "pack" {
                let check = PackCheck(packPath: file, publisherKeys: keys)
                switch check.signature {
                case "valid": notes.append("manifest signature valid")
                case "unverified": notes.append("manifest signature not checked (no trust file)")
                default:
                    throw PackError(
                        .badSignature, subject: check.manifestPath,
                        check.problem ?? "the manifest signature is \(check.signature)")
                }
                if check.sha256Matches == true {
                    notes.append("file SHA-256 is the manifest's")
                } else if check.tileIndexMatches == true {
                    notes.append("tile index is the manifest's (a delta-updated pack)")
                } else {
                    throw PackError(
                        .hashMismatch, subject: file,
                        "neither its SHA-256 nor its tile index is the one its manifest names")
                }
            }
            print(
                """
                \(file): ok: \(stats.tiles) tiles and \(stats.elevationRows) elevation rows match their hashes \
                and decode; 
                """
                    + notes.joined(separator: "; "))
        }
    }
}
