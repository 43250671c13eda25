import Crypto
import Foundation
import Testing
@testable import TilePackCore
@testable import TilePackArchive
@testable import TilePackRegions
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TilePackTestSupport

/// A pack server in memory with real HTTP range semantics (`Range`, `If-Range`, `ETag`,
/// `Content-Range`), and faults on demand: a body that breaks after K bytes, one that sends
/// more than it announces, a corrupted byte, a server that ignores ranges, a refusal.
final class FakePackServer: PackTransport {
    static let base = "http://packs.test"

    struct Faults {
        /// Break the next body after this many bytes.
        var breakAfter: Int64?
        /// Append this many bytes to every body.
        var extraBytes = 0
        /// Flip the byte at this file offset in every body.
        var corruptAt: Int64?
        /// Answer range requests with the whole file (200).
        var ignoreRange = false
        /// Answer every pack request with this status and JSON error code.
        var refusal: (status: Int, code: String?)?
    }

    struct State {
        var files: [String: [UInt8]] = [:]
        var etags: [String: String] = [:]
        var listing: [UInt8] = Array(#"{"packs":[]}"#.utf8)
        var faults = Faults()
        /// Body bytes handed to clients in all (as a proxy counts them).
        var bytesServed: Int64 = 0
        var requests: [(path: String, headers: [(String, String)])] = []
    }

    let state = Locked(State())
    static let chunkSize = 4096

    func set(path: String, bytes: [UInt8]) {
        state.withLock {
            $0.files[path] = bytes
            $0.etags[path] = "\"" + SHA256.hash(data: bytes).hexString.prefix(16) + "\""
        }
    }

    func faults(_ change: (inout Faults) -> Void) { state.withLock { change(&$0.faults) } }
    var bytesServed: Int64 { state.withLock { $0.bytesServed } }
    var requests: [(path: String, headers: [(String, String)])] { state.withLock { $0.requests } }

    func head(url: String, headers: [(String, String)]) async throws -> PackResponse {
        var response = try await get(url: url, headers: headers)
        response.body = .empty
        return response
    }

    func get(url: String, headers: [(String, String)]) async throws -> PackResponse {
        guard url.hasPrefix(Self.base) else { throw POSIXError(.ECONNREFUSED) }
        let path = String(url.dropFirst(Self.base.count))
        let request = PackResponse(status: 0, headers: headers)
        return try state.withLock { s throws -> PackResponse in
            s.requests.append((path, headers))
            if path == "/packs" {
                return PackResponse(status: 200, headers: [], body: self.body(s.listing, breakAfter: nil))
            }
            if let refusal = s.faults.refusal {
                let json =
                    refusal.code.map {
                        #"{"error":"\#($0)","message":"refused by the test","status":\#(refusal.status)}"#
                    } ?? ""
                return PackResponse(
                    status: refusal.status, headers: [("Content-Type", "application/json")],
                    body: self.body(Array(json.utf8), breakAfter: nil))
            }
            guard let file = s.files[path], let etag = s.etags[path] else {
                return PackResponse(
                    status: 404, headers: [],
                    body: self.body(Array(#"{"error":"notFound","message":"no pack"}"#.utf8), breakAfter: nil))
            }
            var start: Int64 = 0
            var status = 200
            if !s.faults.ignoreRange, let range = request.header("Range"), range.hasPrefix("bytes="),
                range.hasSuffix("-"),
                let first = Int64(range.dropFirst(6).dropLast()), request.header("If-Range").map({ $0 == etag }) ?? true
            {
                guard first < Int64(file.count) else {
                    return PackResponse(status: 416, headers: [("Content-Range", "bytes */\(file.count)")])
                }
                start = first
                status = 206
            }
            var bytes = Array(file[Int(start)...])
            if let at = s.faults.corruptAt, at >= start, at < Int64(file.count) { bytes[Int(at - start)] ^= 0xff }
            bytes += [UInt8](repeating: 0x41, count: s.faults.extraBytes)
            var out: [(String, String)] = [
                ("ETag", etag), ("Accept-Ranges", "bytes"), ("Content-Length", String(file.count - Int(start))),
            ]
            if status == 206 { out.append(("Content-Range", "bytes \(start)-\(file.count - 1)/\(file.count)")) }
            let breakAfter = s.faults.breakAfter
            s.faults.breakAfter = nil
            return PackResponse(status: status, headers: out, body: self.body(bytes, breakAfter: breakAfter))
        }
    }

    /// `bytes` in chunks, counted as served when handed out; a failure after `breakAfter`.
    private func body(_ bytes: [UInt8], breakAfter: Int64?) -> PackBody {
        let cursor = Locked(0)
        return PackBody { [self] () async throws -> [UInt8]? in
            let chunk: [UInt8]? = try cursor.withLock { at in
                if let breakAfter, at >= Int(breakAfter) { throw POSIXError(.ECONNRESET) }
                guard at < bytes.count else { return nil }
                var end = min(bytes.count, at + Self.chunkSize)
                if let breakAfter { end = min(end, Int(breakAfter)) }
                defer { at = end }
                return Array(bytes[at..<end])
            }
            if let chunk { state.withLock { $0.bytesServed += Int64(chunk.count) } }
            return chunk
        }
    }
}

@Suite(.tags(.concurrent)) struct RegionsInstallerTests {
    static let publisher = RegionsFixture.publisher
    static let trust = TrustAnchors(
        appStoreRoots: [], bundleID: RegionsFixture.bundleID, environments: [.sandbox],
        publisherKeys: [publisher.publicJWK])
    static let productID = "com.tilepack.tests.chamonix"

    /// A real pack file (``PackFixture``'s, tiles varied by `variant`) and its tile-index digest.
    struct Pack {
        var bytes: [UInt8]
        var digest: String
        var size: Int64 { Int64(bytes.count) }
    }

    private static let packs = Locked<[Int: Pack]>([:])

    static func pack(_ variant: Int) throws -> Pack {
        if let cached = packs.withLock({ $0[variant] }) { return cached }
        let dir = TemporaryDirectory()
        let stats = try PackFixture.write(
            dir.file("p.mbtiles"), seed: { $0.z * 1000 + $0.x * 31 + $0.y + variant * 100_000 })
        let pack = Pack(bytes: readFile(dir.file("p.mbtiles")), digest: stats.indexDigest)
        packs.withLock { $0[variant] = pack }
        return pack
    }

    static func manifest(
        _ id: String = "chamonix", product: String? = productID, version: Int, pack: Pack,
        minReader: Int = 1, codec: String = "png"
    ) -> PackManifest {
        PackManifest(
            packID: id, productID: id == PackManifest.freePackID ? nil : product, version: version,
            releasedAt: 1_704_067_200_000 + Int64(version), minReaderVersion: minReader,
            archives: [
                .init(
                    name: "montblanc-color.mbtiles", sha256: String(repeating: "a", count: 64), minzoom: 9, maxzoom: 13,
                    codec: codec)
            ],
            bounds: [6.8, 45.8, 7.0, 46.0], perZoom: [.init(z: 9, tiles: 1, bytes: pack.bytes.count)],
            totalBytes: pack.size, sha256: SHA256.hash(data: pack.bytes).hexString, tileIndexSHA256: pack.digest,
            attribution: "test", license: "CC0")
    }

    static func sign(_ m: PackManifest, key: JWK = publisher) throws -> String {
        try SignedPackManifest.sign(m, key: try key.privateKey(source: "publisher key"))
    }

    /// One `/packs` entry: the manifest's fields, its JWS, its url and deltas.
    static func entry(
        _ m: PackManifest, jws: String, fields: PackManifest? = nil, deltas: String = "[]"
    ) throws -> String {
        let object = try JSONOutput.string(fields ?? m)
        return String(object.dropLast()) + #","manifest":"\#(jws)","url":"/packs/\#(m.packID)","deltas":\#(deltas)}"#
    }

    /// A server offering `packs` (manifest, bytes), and a library directory.
    struct Setup {
        let dir = TemporaryDirectory()
        let server = FakePackServer()
        var library: String { dir.path }
        var packs: String { dir.file("packs") }

        func offer(_ packs: [(PackManifest, Pack)], entries: [String]? = nil) throws {
            var lines: [String] = []
            for (m, bytes) in packs {
                server.set(path: "/packs/\(m.packID)", bytes: bytes.bytes)
                lines.append(try RegionsInstallerTests.entry(m, jws: try RegionsInstallerTests.sign(m)))
            }
            server.state.withLock {
                $0.listing = Array(#"{"packs":[\#((entries ?? lines).joined(separator: ","))]}"#.utf8)
            }
        }

        func installer(quota: Int64? = nil, transaction: String? = "eyJ.test.jws") -> RegionInstaller {
            RegionInstaller(
                library: library, trust: RegionsInstallerTests.trust, server: FakePackServer.base + "/",
                transport: server, quotaBytes: quota, transaction: { _ in transaction })
        }

        func packFiles() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: packs)) ?? []).filter { !$0.hasSuffix(".lock") }
                .sorted()
        }
    }

    static func code(_ body: () async throws -> Void) async -> PackError.Code? {
        do { try await body() } catch let error as PackError { return error.code } catch { return nil }
        return nil
    }

    static func failure(_ body: () async throws -> Void) async -> PackError? {
        do { try await body() } catch let error as PackError { return error } catch { return nil }
        return nil
    }

    // MARK: -

    @Test func installsVerifiedPackWithItsManifestThenSaysUpToDate() async throws {
        let setup = Setup()
        let bytes = try Self.pack(1)
        let m = Self.manifest(version: 1, pack: bytes)
        try setup.offer([(m, bytes)])
        let installer = setup.installer()
        let events = Locked<[PackProgress]>([])
        let result = try await installer.install("chamonix") { p in events.withLock { $0.append(p) } }
        #expect(
            result.mode == .full && result.version == 1 && result.bytesReceived == bytes.size && result.resumedFrom == 0
        )
        #expect(result.sha256 == m.sha256 && result.reason == "full: not installed")
        #expect(readFile(setup.packs + "/chamonix.mbtiles") == bytes.bytes)
        #expect(String(decoding: readFile(setup.packs + "/chamonix.manifest.jws"), as: UTF8.self) == (try Self.sign(m)))
        #expect(setup.packFiles() == ["chamonix.manifest.jws", "chamonix.mbtiles"])
        let downloading = events.withLock { $0 }.filter { $0.phase == .downloading }.map(\.bytesReceived)
        #expect(downloading.last == bytes.size && downloading == downloading.sorted())
        #expect(events.withLock { $0 }.last?.phase == .done)
        // The transaction went with the pack request, not with the listing.
        let sent = setup.server.requests
        #expect(
            sent.first { $0.path == "/packs/chamonix" }?.headers.contains {
                $0 == ("Authorization", "Bearer eyJ.test.jws")
            } == true)
        #expect(sent.first { $0.path == "/packs" }?.headers.contains { $0.0 == "Authorization" } == false)

        let again = try await installer.install("chamonix")
        #expect(again.mode == .upToDate && again.bytesReceived == 0)
        #expect(
            try installer.installed().map { [$0.packID, "\($0.version ?? 0)", "\($0.bytes)", $0.problem ?? "ok"] } == [
                ["chamonix", "1", "\(bytes.size)", "ok"]
            ])
        #expect(try await installer.check("chamonix") == .upToDate(version: 1))
    }

    @Test func resumesFromThePartAfterBrokenConnections() async throws {
        let setup = Setup()
        let bytes = try Self.pack(2)
        let m = Self.manifest(version: 1, pack: bytes)
        try setup.offer([(m, bytes)])
        let installer = setup.installer()
        var held: Int64 = 0
        for cut in [bytes.size / 7, bytes.size / 5 + 1, bytes.size / 3 + 7] {
            setup.server.faults { $0.breakAfter = cut }
            let error = await Self.failure { _ = try await installer.install("chamonix") }
            #expect(error?.code == .network)
            held += cut
            #expect(PackDirectory.regularFileSize(setup.packs + "/chamonix.mbtiles.part") == held)
            #expect(
                !fileExists(setup.packs + "/chamonix.mbtiles") && !fileExists(setup.packs + "/chamonix.manifest.jws"))
        }
        let result = try await installer.install("chamonix")
        #expect(result.resumedFrom == held && result.bytesReceived == bytes.size - held)
        #expect(readFile(setup.packs + "/chamonix.mbtiles") == bytes.bytes)
        #expect(setup.packFiles() == ["chamonix.manifest.jws", "chamonix.mbtiles"])
        #expect(Double(setup.server.bytesServed) < 1.1 * Double(bytes.size))
        // Each resumed request carried the range and the ETag it continues.
        let ranged = setup.server.requests.filter { $0.path == "/packs/chamonix" }.dropFirst()
        #expect(
            ranged.count == 3
                && ranged.allSatisfy { r in
                    r.headers.contains { $0.0 == "If-Range" } && r.headers.contains { $0.0 == "Range" }
                })
    }

    @Test func aServerThatIgnoresRangesRestartsThePartFromZero() async throws {
        let setup = Setup()
        let bytes = try Self.pack(3)
        try setup.offer([(Self.manifest(version: 1, pack: bytes), bytes)])
        let installer = setup.installer()
        setup.server.faults { $0.breakAfter = bytes.size / 2 }
        _ = await Self.failure { _ = try await installer.install("chamonix") }
        setup.server.faults { $0.ignoreRange = true }
        let result = try await installer.install("chamonix")
        #expect(result.resumedFrom == 0 && result.bytesReceived == bytes.size)
        #expect(readFile(setup.packs + "/chamonix.mbtiles") == bytes.bytes)
    }

    @Test func aPartOfAnotherVersionIsDiscardedNotResumed() async throws {
        let setup = Setup()
        let bytes = try Self.pack(4)
        try setup.offer([(Self.manifest(version: 2, pack: bytes), bytes)])
        #expect(mkdir(setup.packs, 0o700) == 0)
        writeFile(setup.packs + "/chamonix.mbtiles.part", try Self.pack(9).bytes)
        writeFile(
            setup.packs + "/chamonix.mbtiles.part.json",
            Array(#"{"identity":"pack sha256 \#(String(repeating: "0", count: 64))","etag":"\"x\""}"#.utf8))
        let result = try await setup.installer().install("chamonix")
        #expect(result.resumedFrom == 0 && result.bytesReceived == bytes.size)
        #expect(readFile(setup.packs + "/chamonix.mbtiles") == bytes.bytes)
    }

    @Test func aCorruptedByteIsDetectedAndNothingIsInstalledOrLeft() async throws {
        let setup = Setup()
        let bytes = try Self.pack(5)
        try setup.offer([(Self.manifest(version: 1, pack: bytes), bytes)])
        setup.server.faults { $0.corruptAt = bytes.size / 2 }
        let error = await Self.failure { _ = try await setup.installer().install("chamonix") }
        #expect(error?.code == .hashMismatch)
        #expect(error?.description.contains("signed manifest") == true && error?.description.contains("\n") == false)
        #expect(setup.packFiles().isEmpty)
    }

    @Test func moreBytesThanAnnouncedIsANetworkErrorAndThePartStaysWithinTheSize() async throws {
        let setup = Setup()
        let bytes = try Self.pack(6)
        try setup.offer([(Self.manifest(version: 1, pack: bytes), bytes)])
        setup.server.faults { $0.extraBytes = 5000 }
        let error = await Self.failure { _ = try await setup.installer().install("chamonix") }
        #expect(error?.code == .network && error?.detail.contains("more than") == true)
        #expect(!fileExists(setup.packs + "/chamonix.mbtiles") && !fileExists(setup.packs + "/chamonix.manifest.jws"))
        #expect((PackDirectory.regularFileSize(setup.packs + "/chamonix.mbtiles.part") ?? 0) <= bytes.size)
        // Once the server behaves, the pack installs (the .part is completed or discarded by its hash).
        setup.server.faults { $0.extraBytes = 0 }
        _ = try await setup.installer().install("chamonix")
        #expect(readFile(setup.packs + "/chamonix.mbtiles") == bytes.bytes)
    }

    @Test func aDowngradeIsRefusedAndTheInstalledVersionStays() async throws {
        let setup = Setup()
        let v2 = try Self.pack(7), v1 = try Self.pack(8)
        try setup.offer([(Self.manifest(version: 2, pack: v2), v2)])
        _ = try await setup.installer().install("chamonix")
        try setup.offer([(Self.manifest(version: 1, pack: v1), v1)])
        let error = await Self.failure { _ = try await setup.installer().install("chamonix") }
        #expect(error?.code == .downgrade && error?.detail.contains("version 2 is installed") == true)
        #expect(await Self.code { _ = try await setup.installer().check("chamonix") } == .downgrade)
        #expect(readFile(setup.packs + "/chamonix.mbtiles") == v2.bytes)
        #expect(try setup.installer().installed().first?.version == 2)
    }

    @Test func aPackForANewerReaderIsRefusedWithOneLine() async throws {
        let setup = Setup()
        let bytes = try Self.pack(9)
        try setup.offer([(Self.manifest(version: 1, pack: bytes, minReader: PackInstall.readerVersion + 1), bytes)])
        let error = await Self.failure { _ = try await setup.installer().install("chamonix") }
        #expect(error?.code == .unsupportedVersion && error?.description.contains("needs pack reader 2") == true)
        #expect(!setup.server.requests.contains { $0.path == "/packs/chamonix" } && setup.packFiles().isEmpty)
    }

    @Test func theQuotaRefusesWithTheFigures() async throws {
        let setup = Setup()
        let a = try Self.pack(10), b = try Self.pack(11)
        try setup.offer([
            (Self.manifest("chamonix", version: 1, pack: a), a),
            (Self.manifest("courmayeur", product: "com.tilepack.tests.courmayeur", version: 1, pack: b), b),
        ])
        _ = try await setup.installer(quota: a.size + b.size - 1).install("chamonix")
        let error = await Self.failure {
            _ = try await setup.installer(quota: a.size + b.size - 1).install("courmayeur")
        }
        #expect(error?.code == .noSpace)
        #expect(
            error?.detail.contains("\(a.size)") == true && error?.detail.contains("\(b.size)") == true
                && error?.detail.contains("\(a.size + b.size - 1)") == true)
        #expect(setup.packFiles() == ["chamonix.manifest.jws", "chamonix.mbtiles"])
        _ = try await setup.installer(quota: a.size + b.size).install("courmayeur")
    }

    @Test func aSecondDownloadOfThePackIsBusy() async throws {
        let setup = Setup()
        let bytes = try Self.pack(12)
        try setup.offer([(Self.manifest(version: 1, pack: bytes), bytes)])
        #expect(mkdir(setup.packs, 0o700) == 0)
        let held = try PackLock.acquire(setup.packs + "/chamonix.lock", packID: "chamonix")
        #expect(await Self.code { _ = try await setup.installer().install("chamonix") } == .busy)
        #expect(await Self.code { _ = try setup.installer().remove("chamonix") } == .busy)
        held.unlock()
        _ = try await setup.installer().install("chamonix")
    }

    @Test func removeFreesTheSpaceManifestFirst() async throws {
        let setup = Setup()
        let bytes = try Self.pack(13)
        try setup.offer([(Self.manifest(version: 1, pack: bytes), bytes)])
        let installer = setup.installer()
        #expect(await Self.code { _ = try installer.remove("chamonix") } == .notFound)
        _ = try await installer.install("chamonix")
        let manifestBytes = Int64(readFile(setup.packs + "/chamonix.manifest.jws").count)
        #expect(try installer.remove("chamonix") == bytes.size + manifestBytes)
        #expect(try setup.packFiles().isEmpty && installer.installed().isEmpty)
        #expect(await Self.code { _ = try installer.remove("chamonix") } == .notFound)
        // A partial download alone is removed too.
        setup.server.faults { $0.breakAfter = 10_000 }
        _ = await Self.failure { _ = try await installer.install("chamonix") }
        let stateBytes = try #require(PackDirectory.regularFileSize(setup.packs + "/chamonix.mbtiles.part.json"))
        #expect(try installer.remove("chamonix") == 10_000 + stateBytes)
        #expect(setup.packFiles().isEmpty)
    }

    @Test func aFailedInstallNeverLeavesAManifestWithoutItsPack() async throws {
        let setup = Setup()
        let bytes = try Self.pack(14)
        try setup.offer([(Self.manifest(version: 1, pack: bytes), bytes)])
        // The pack's name is taken by a directory: moving the verified .part there fails.
        #expect(mkdir(setup.packs, 0o700) == 0 && mkdir(setup.packs + "/chamonix.mbtiles", 0o700) == 0)
        #expect(await Self.code { _ = try await setup.installer().install("chamonix") } == .io)
        #expect(!fileExists(setup.packs + "/chamonix.manifest.jws"))
        #expect(setup.packFiles().allSatisfy { !$0.contains("manifest") })
    }

    @Test func anUpdateThatFailsLeavesTheInstalledPairAsItWas() async throws {
        let setup = Setup()
        let v1 = try Self.pack(15), v2 = try Self.pack(16)
        let m1 = Self.manifest(version: 1, pack: v1)
        try setup.offer([(m1, v1)])
        let installer = setup.installer()
        _ = try await installer.install("chamonix")
        try setup.offer([(Self.manifest(version: 2, pack: v2), v2)])
        #expect(
            try await installer.check("chamonix")
                == .updateAvailable(
                    installed: 1, latest: 2,
                    plan: .full(reason: "full: the server keeps no delta from version 1", bytes: v2.size)))
        setup.server.faults { $0.corruptAt = 5 }
        #expect(await Self.code { _ = try await installer.update("chamonix") } == .hashMismatch)
        #expect(readFile(setup.packs + "/chamonix.mbtiles") == v1.bytes)
        #expect(
            String(decoding: readFile(setup.packs + "/chamonix.manifest.jws"), as: UTF8.self) == (try Self.sign(m1)))
        setup.server.faults { $0.corruptAt = nil }
        let result = try await installer.update("chamonix")
        #expect(result.mode == .full && result.version == 2 && readFile(setup.packs + "/chamonix.mbtiles") == v2.bytes)
    }

    @Test func theServersRefusalsBecomeTheirCodes() async throws {
        let setup = Setup()
        let bytes = try Self.pack(17)
        try setup.offer([(Self.manifest(version: 1, pack: bytes), bytes)])
        for (status, code, expected) in [
            (401, "missingTransaction", PackError.Code.missingTransaction),
            (401, "invalidTransaction", .invalidTransaction), (403, "notEntitled", .notEntitled),
            (403, "revoked", .revoked), (403, "expired", .expired),
        ] {
            setup.server.faults { $0.refusal = (status, code) }
            #expect(await Self.code { _ = try await setup.installer().install("chamonix") } == expected)
        }
        setup.server.faults { $0.refusal = (401, nil) }
        #expect(
            await Self.code { _ = try await setup.installer(transaction: nil).install("chamonix") }
                == .missingTransaction)
        #expect(setup.server.requests.last?.headers.contains { $0.0 == "Authorization" } == false)
        setup.server.faults { $0.refusal = (500, nil) }
        #expect(await Self.code { _ = try await setup.installer().install("chamonix") } == .network)
        #expect(setup.packFiles().isEmpty)
    }

    @Test func theListingIsVerifiedEntryByEntry() async throws {
        let setup = Setup()
        let bytes = try Self.pack(18)
        let good = Self.manifest(version: 1, pack: bytes)
        let other = Self.manifest("courmayeur", product: "com.tilepack.tests.courmayeur", version: 1, pack: bytes)
        let third = Self.manifest("bundle", product: "com.tilepack.tests.bundle", version: 1, pack: bytes)
        var edited = other
        edited.totalBytes = 1
        let foreign = JWK.newPrivateKey()
        try setup.offer(
            [(good, bytes), (other, bytes)],
            entries: [
                try Self.entry(good, jws: try Self.sign(good)),
                try Self.entry(other, jws: try Self.sign(other), fields: edited),
                try Self.entry(third, jws: try Self.sign(third, key: foreign)),
                #"{"pack_id":"broken"}"#,
            ])
        let listing = try await setup.installer().packs()
        #expect(listing.packs.map(\.packID) == ["chamonix"])
        #expect(listing.refused.map(\.error.code) == [.badSignature, .badSignature, .invalidManifest])
        #expect(listing.refused.map(\.claimedPackID) == ["courmayeur", "bundle", "broken"])
        #expect(await Self.code { _ = try await setup.installer().install("courmayeur") } == .badSignature)
        #expect(await Self.code { _ = try await setup.installer().install("bundle") } == .badSignature)
        #expect(await Self.code { _ = try await setup.installer().install("nowhere") } == .notFound)
        // A pack url off the server is refused (the transaction would go there).
        let offsite = try Self.entry(good, jws: try Self.sign(good)).replacingOccurrences(
            of: #""url":"/packs/chamonix""#, with: #""url":"//evil.test/x""#)
        setup.server.state.withLock { $0.listing = Array(#"{"packs":[\#(offsite)]}"#.utf8) }
        #expect(try await setup.installer().packs().refused.first?.error.code == .invalidManifest)
    }

    /// Versions 1 and 2 of a pack (``ArchivePackDeltaTests``' seeds) and the delta between them.
    struct DeltaVersions {
        let v1: Pack, v2: Pack
        let delta: [UInt8]
        init() throws {
            let v = try PackFixture.Versions()
            v1 = Pack(bytes: readFile(v.v1), digest: v.v1Stats.indexDigest)
            v2 = Pack(bytes: readFile(v.v2), digest: v.v2Stats.indexDigest)
            delta = readFile(v.delta)
        }

        func offerV2(_ setup: Setup, delta served: [UInt8]? = nil, codec: String = "png") throws -> PackManifest {
            let m2 = RegionsInstallerTests.manifest(version: 2, pack: v2, codec: codec)
            setup.server.set(path: "/packs/chamonix", bytes: v2.bytes)
            setup.server.set(path: "/packs/chamonix/deltas/1", bytes: served ?? delta)
            let entry = try RegionsInstallerTests.entry(
                m2, jws: try RegionsInstallerTests.sign(m2),
                deltas: #"[{"from":1,"url":"/packs/chamonix/deltas/1","bytes":\#((served ?? delta).count)}]"#)
            setup.server.state.withLock { $0.listing = Array(#"{"packs":[\#(entry)]}"#.utf8) }
            return m2
        }
    }

    @Test func anUpdateFetchesOnlyTheDeltaAndEndsAsTheNewVersion() async throws {
        let setup = Setup()
        let versions = try DeltaVersions()
        #expect(versions.delta.count < versions.v2.bytes.count)
        try setup.offer([(Self.manifest(version: 1, pack: versions.v1), versions.v1)])
        let installer = setup.installer()
        _ = try await installer.install("chamonix")
        let m2 = try versions.offerV2(setup)
        guard case .updateAvailable(1, 2, .deltas(let chain, _)) = try await installer.check("chamonix") else {
            Issue.record("no delta plan"); return
        }
        #expect(chain.map(\.from) == [1])
        let served = setup.server.bytesServed
        let result = try await installer.update("chamonix")
        #expect(result.mode == .delta && result.version == 2 && result.bytesReceived == Int64(versions.delta.count))
        let listingBytes = setup.server.state.withLock { Int64($0.listing.count) }
        #expect(setup.server.bytesServed - served == Int64(versions.delta.count) + listingBytes)
        #expect(try PackReader(path: setup.packs + "/chamonix.mbtiles").indexDigest() == versions.v2.digest)
        #expect(
            String(decoding: readFile(setup.packs + "/chamonix.manifest.jws"), as: UTF8.self) == (try Self.sign(m2)))
        #expect(setup.packFiles() == ["chamonix.manifest.jws", "chamonix.mbtiles"])
        // The delta-updated pack (other bytes, same tiles) counts as version 2, verified.
        #expect(try await installer.install("chamonix").mode == .upToDate)
    }

    @Test func aBadDeltaFallsBackToTheFullPackAndAFormatChangeIsFull() async throws {
        let setup = Setup()
        let versions = try DeltaVersions()
        try setup.offer([(Self.manifest(version: 1, pack: versions.v1), versions.v1)])
        let installer = setup.installer()
        _ = try await installer.install("chamonix")
        // A truncated delta: refused when applied, the installed v1 untouched, then the full pack.
        _ = try versions.offerV2(setup, delta: Array(versions.delta.prefix(versions.delta.count / 2)))
        let result = try await installer.update("chamonix")
        #expect(result.mode == .full && result.reason.hasPrefix("full: the delta update failed"))
        #expect(readFile(setup.packs + "/chamonix.mbtiles") == versions.v2.bytes)
        #expect(setup.packFiles() == ["chamonix.manifest.jws", "chamonix.mbtiles"])

        _ = try installer.remove("chamonix")
        try setup.offer([(Self.manifest(version: 1, pack: versions.v1), versions.v1)])
        _ = try await installer.install("chamonix")
        _ = try versions.offerV2(setup, codec: "astc6x6")
        let changed = try await installer.update("chamonix")
        #expect(changed.mode == .full && changed.reason == "full: format changed")
    }

    @Test func theUpdatePlanTakesTheSmallerDeltaChainUnlessTheFormatChanged() throws {
        let bytes = try Self.pack(19)
        let v1 = Self.manifest(version: 1, pack: bytes), v3 = Self.manifest(version: 3, pack: bytes)
        func listed(_ m: PackManifest, _ deltas: [(Int, Int64)]) -> ListedPack {
            ListedPack(
                manifest: m, jws: "", path: "/packs/chamonix",
                deltas: deltas.map { .init(from: $0.0, url: "/packs/chamonix/deltas/\($0.0)", bytes: $0.1) })
        }
        let chain = PackUpdatePlan.choose(installed: v1, listed: listed(v3, [(2, 200), (1, 100)]))
        #expect(
            chain
                == .deltas(
                    [
                        .init(from: 1, url: "/packs/chamonix/deltas/1", bytes: 100),
                        .init(from: 2, url: "/packs/chamonix/deltas/2", bytes: 200),
                    ], bytes: 300))
        #expect(chain.reason == "delta: 2 steps, 300 bytes")
        #expect(
            PackUpdatePlan.choose(installed: v1, listed: listed(v3, [(2, 200)])).reason
                == "full: the server keeps no delta from version 1")
        #expect(
            PackUpdatePlan.choose(installed: v1, listed: listed(v3, [(1, bytes.size - 400), (2, 400)])).reason
                .hasPrefix("full: the deltas (\(bytes.size) bytes)"))
        #expect(
            PackUpdatePlan.choose(installed: nil, listed: listed(v3, [(1, 1), (2, 1)])).reason == "full: not installed")
        var astc = v3
        astc.archives[0].codec = "astc6x6"
        #expect(
            PackUpdatePlan.choose(installed: v1, listed: listed(astc, [(1, 1), (2, 1)])).reason
                == "full: format changed")
    }
}
