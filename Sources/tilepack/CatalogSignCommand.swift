import ArgumentParser
import TilePack

/// `tilepack catalog sign CATALOG --key publisher.jwk [-o OUT]`: the signed catalog.
struct CatalogSignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign a catalog (schema version 2) with the publisher's key: writes catalog.jws.",
        discussion: """
            The catalog is validated first, and refused when a product sells zooms that none \
            of its archives holds. Archives its products name get their SHA-256 from \
            the files beside the catalog when archive_sha256 does not give it (the signed \
            payload is then the catalog with those hashes added). Output: a compact JWS, header \
            alg EdDSA, kid, typ tilepack-catalog+jws; by default catalog.jws beside the catalog.
            """)

    @Argument(help: "The catalog JSON (version 2, with a serial).")
    var catalog: String

    @Option(help: "The publisher's private JWK (from `tilepack catalog keygen`).")
    var key: String

    @Option(name: .shortAndLong, help: "Output file (default: catalog.jws beside the catalog).")
    var output: String?

    func run() throws {
        try exitingOnError {
            if let output { try OutputPath.checkDirectory(of: output) }
            let jwk = try JWK.read(path: key, requirePrivate: true)
            let privateKey = try jwk.privateKey(source: key)
            let directory = catalog.lastIndex(of: "/").map { String(catalog[..<$0]) } ?? "."
            let bytes = try Catalog.readFile(catalog)
            let payload = try CatalogPayload(filling: bytes, path: catalog, libraryDirectory: directory)
            try payload.catalog.requireHeldZooms(libraryDirectory: directory, path: catalog)
            let jws = try SignedCatalog.sign(payload, key: privateKey, path: catalog)
            let hashed = payload.hashed
            let path = output ?? (directory + "/" + SignedCatalog.fileName)
            try RegionFiles.writeAtomically(path: path, bytes: Array((jws + "\n").utf8), mode: 0o644)
            let note = hashed.isEmpty ? "" : " (SHA-256 added for \(hashed.joined(separator: ", ")))"
            print("signed \(catalog) with key \(jwk.keyID) -> \(path)\(note)")
        }
    }
}
