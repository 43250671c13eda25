import Foundation
import Testing
@testable import TilePackCore
@testable import TilePackRegions
import TilePackTestSupport

/// The publisher-signed catalog (`catalog.jws`): what signs, what verifies, and every way a
/// device owner might change it being refused.
@Suite(.tags(.concurrent)) struct RegionsSignedCatalogTests {
    static let publisher = JWK.newPrivateKey()

    /// A version-2 catalog selling one region from `a.mbtiles`, with the given hash line.
    static func catalogV2(serial: Int = 3, hashes: String? = nil) -> [UInt8] {
        let top =
            "\"version\": 2, \"serial\": \(serial), \"free_max_zoom\": 10"
            + (hashes.map { ", \"archive_sha256\": \($0)" } ?? "")
        return RegionsCatalogTests.catalogJSON([RegionsCatalogTests.product("r1")], top: top)
    }

    /// A library with `a.mbtiles` holding `content`, its catalog signed with `publisher`.
    static func signedLibrary(content: [UInt8] = Array("archive bytes".utf8)) throws -> (TemporaryDirectory, String) {
        let dir = TemporaryDirectory()
        _ = try dir.write("a.mbtiles", content)
        _ = try dir.write("catalog.json", catalogV2())
        let payload = try CatalogPayload(
            filling: catalogV2(), path: dir.file("catalog.json"), libraryDirectory: dir.path)
        #expect(payload.hashed == ["a.mbtiles"])
        #expect(
            CatalogPayload.decodes(payload.bytes, to: payload.catalog), "the signed bytes decode to the catalog checked"
        )
        let key = try publisher.privateKey(source: "test")
        let jws = try SignedCatalog.sign(payload, key: key, path: "catalog.json")
        _ = try dir.write(SignedCatalog.fileName, Array(jws.utf8))
        return (dir, jws)
    }

    @Test func signedCatalogLoadsWithThePublisherKey() throws {
        let (dir, jws) = try Self.signedLibrary()
        let (catalog, text) = try SignedCatalog.load(
            libraryDirectory: dir.path, publisherKeys: [Self.publisher.publicJWK])
        #expect(text == jws)
        #expect(catalog.serial == 3)
        #expect(catalog.archiveSHA256["a.mbtiles"] == SHA256Hex.of(Array("archive bytes".utf8)))
        #expect(catalog.product(id: "r1")?.isAvailable == true)
        let header = try JWS.unverifiedHeader(jws, source: "t")
        #expect(header.typ == "tilepack-catalog+jws" && header.alg == "EdDSA" && header.kid == Self.publisher.keyID)
    }

    @Test func anyChangeOrOtherKeyIsRefused() throws {
        let (dir, jws) = try Self.signedLibrary()
        let keys = [Self.publisher.publicJWK]
        func refusal(_ text: String) -> CatalogError.Code? {
            do {
                _ = try SignedCatalog.verify(text, publisherKeys: keys, path: "c", libraryDirectory: nil); return nil
            } catch let error as CatalogError {
                #expect(!error.description.contains("\n"))
                return error.code
            } catch {
                Issue.record("\(error)")
                return nil
            }
        }
        // One character changed in each part (payload, signature).
        let parts = jws.split(separator: ".").map(String.init)
        var payload = Array(parts[1].utf8);
        payload[10] = payload[10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(refusal(parts[0] + "." + String(decoding: payload, as: UTF8.self) + "." + parts[2]) == .badSignature)
        var signature = Array(parts[2].utf8);
        signature[5] = signature[5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(refusal(parts[0] + "." + parts[1] + "." + String(decoding: signature, as: UTF8.self)) == .badSignature)
        // Signed by another key (the device owner's own).
        let mine = JWK.newPrivateKey()
        let forged = try SignedCatalog.sign(
            Self.catalogV2(hashes: "{\"a.mbtiles\": \"\(String(repeating: "0", count: 64))\"}"),
            key: try mine.privateKey(source: "t"), path: "c")
        #expect(refusal(forged) == .badSignature)
        // The publisher's key, but a token of another type (a transaction-style JWT).
        let jwt = try JWS.sign(
            bytes: Array(parts[1].utf8), key: try Self.publisher.privateKey(source: "t"), kid: Self.publisher.keyID)
        #expect(refusal(jwt) == .badSignature)
        // No trusted keys at all: nothing verifies.
        #expect(throws: CatalogError.self) {
            try SignedCatalog.verify(jws, publisherKeys: [], path: "c", libraryDirectory: nil)
        }
        _ = dir
    }

    @Test func aSignedCatalogIsVersionTwoWithEveryArchiveHashed() throws {
        let key = try Self.publisher.privateKey(source: "t")
        #expect(throws: CatalogError.self) {
            try SignedCatalog.sign(RegionsCatalogTests.catalogJSON([]), key: key, path: "v1")
        }
        do {
            _ = try SignedCatalog.sign(Self.catalogV2(), key: key, path: "c")
            Issue.record("a catalog without the archive's hash was signed")
        } catch let error as CatalogError {
            #expect(error.code == .badArchives && error.field == "products[0].archives[0]")
        }
        // Filling hashes needs the archive.
        let empty = TemporaryDirectory()
        #expect(throws: CatalogError.self) {
            _ = try CatalogPayload(filling: Self.catalogV2(), path: "c", libraryDirectory: empty.path)
        }
    }

    @Test func anArchiveThatIsNotTheSignedOneMakesItsProductUnavailable() throws {
        let (dir, _) = try Self.signedLibrary()
        _ = try dir.write("a.mbtiles", Array("another archive renamed".utf8))
        let (catalog, _) = try SignedCatalog.load(libraryDirectory: dir.path, publisherKeys: [Self.publisher.publicJWK])
        let product = try #require(catalog.product(id: "r1"))
        #expect(!product.isAvailable)
        if case .unavailable(let reason) = product.availability { #expect(reason.contains("SHA-256 differs")) }
    }

    @Test func missingLoopedOrFIFOCatalogFailsFastWithOneLine() throws {
        let dir = TemporaryDirectory()
        let keys = [Self.publisher.publicJWK]
        #expect(throws: CatalogError.self) { try SignedCatalog.load(libraryDirectory: dir.path, publisherKeys: keys) }
        symlink(dir.file("catalog.jws"), dir.file("catalog.jws"))
        #expect(throws: CatalogError.self) { try SignedCatalog.load(libraryDirectory: dir.path, publisherKeys: keys) }
        unlink(dir.file("catalog.jws"))
        #expect(mkfifo(dir.file("catalog.jws"), 0o600) == 0)
        do {
            _ = try SignedCatalog.load(libraryDirectory: dir.path, publisherKeys: keys)
            Issue.record("a FIFO was read as a catalog")
        } catch let error as CatalogError {
            #expect(error.description.contains("regular file"))
        }
    }
}

/// SHA-256 in lowercase hex, for expectations.
enum SHA256Hex {
    static func of(_ bytes: [UInt8]) -> String {
        let dir = TemporaryDirectory()
        let path = (try? dir.write("x", bytes)) ?? dir.file("x")
        return (try? FileDigest.sha256(path: path)) ?? ""
    }
}
