import Testing
import Crypto
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackRegions
@testable import TilePackTools
import TilePackTestSupport

/// The purchases half of the region store: base64url and the Ed25519 JWS the catalog is
/// signed with, the test App Store's transactions, and the entitlement ledger (derived
/// entitlements, what it refuses to count and why, the clock, read-only opens, ledgers of an
/// earlier tilepack, concurrency).
@Suite(.tags(.concurrent)) struct RegionsLedgerTests {
    static let t0 = RegionsFixture.t0
    static let day = RegionsFixture.day
    static let account = RegionsFixture.account
    static let otherAccount = RegionsFixture.otherAccount
    static func ms(_ date: Date) -> Int64 { RegionsFixture.ms(date) }

    /// A test App Store and a read-write ledger of `account` in one scratch directory, on one
    /// movable clock.
    struct Fixture {
        let shop: TestStoreFixture
        let ledger: EntitlementLedger
        var store: TestAppStore { shop.store }
        var clock: MovableClock { shop.clock }
        var dir: TemporaryDirectory { shop.dir }
        var verifier: AppStoreVerifier { shop.verifier }
        var account: String { RegionsFixture.account }

        init() throws {
            shop = try TestStoreFixture()
            ledger = try EntitlementLedger(
                path: shop.dir.file("ledger.sqlite"), verifier: shop.verifier,
                account: RegionsFixture.account, clock: shop.clock)
        }

        /// A purchase: the store's signed transaction, its payload and id.
        struct Bought {
            var jws: String
            var payload: AppStoreTransaction
            var id: String
        }

        /// Buys at the store and records it in the ledger.
        @discardableResult
        func buy(_ product: String, type: AppStoreProductType = .nonConsumable, period: String? = nil) throws -> Bought
        {
            let jws = try shop.sell(product, type: type, period: period)
            try ledger.import(signed: [jws])
            let payload = try verifier.verifyTransaction(jws, source: "test")
            return Bought(jws: jws, payload: payload, id: try #require(payload.transactionId))
        }

        /// Product ids entitled at `now`.
        func owned(_ now: Date = RegionsLedgerTests.t0) throws -> [String] {
            try ledger.entitlements(now: now).map(\.productID)
        }

        /// A raw connection on the ledger file, as someone editing it by hand.
        func sql(_ statement: String) throws {
            let db = try SQLiteConnection(path: ledger.path, mode: .readWriteCreate)
            try db.execute(statement)
        }
    }

    /// Every row of `tables` in the ledger file, as text, by primary key (`meta` by key,
    /// `transactions` by transaction id).
    static func dump(_ path: String, tables: [String] = ["meta", "transactions"]) throws -> [[String?]] {
        let db = try SQLiteConnection(path: path, mode: .readOnly)
        var rows: [[String?]] = []
        for table in tables {
            let select = try db.prepare("SELECT * FROM \(table) ORDER BY \(table == "meta" ? "key" : "transaction_id")")
            while try select.step() { rows.append([table] + (0..<select.columnCount).map { select.string(at: $0) }) }
        }
        return rows
    }

    /// "reason" or "unverified(verification)" for each rejected row of `report`.
    static func reasons(_ report: LedgerReport) -> [String] {
        report.rejected.map { row in
            row.verification.map { "\(row.reason.rawValue)(\($0.rawValue))" } ?? row.reason.rawValue
        }
    }

    // MARK: base64url and JWS (the publisher's catalog signature)

    @Test func base64urlRoundTripsEveryLength() throws {
        for n in 0..<70 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(try Base64URL.decode(text) == bytes)
        }
        #expect(Base64URL.encode(Array("f".utf8)) == "Zg")
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
    }

    @Test(arguments: ["Zg==", "Zg=", "Z", "Zh", "ab+c", "ab/c", "ab c", "ab\nc", "abcde", "é"])
    func base64urlRejects(_ text: String) {
        // Padding, the standard alphabet, whitespace, impossible lengths, unused bits set ("Zh"), non-ASCII.
        #expect(throws: JWSError.self) { try Base64URL.decode(text) }
    }

    struct Claim: Codable, Equatable { var sub: String; var n: Int }

    @Test func jwsRoundTripAndHeader() throws {
        let key = Curve25519.Signing.PrivateKey()
        let jwk = JWK(privateKey: key)
        let token = try JWS.sign(Claim(sub: "x", n: 7), key: key, kid: jwk.keyID)
        #expect(token.split(separator: ".").count == 3)
        let header = try JWS.unverifiedHeader(token, source: "t")
        #expect(header == JWSHeader(kid: jwk.keyID))
        let headerJSON = String(decoding: try Base64URL.decode(token.split(separator: ".")[0]), as: UTF8.self)
        #expect(headerJSON == #"{"alg":"EdDSA","kid":"\#(jwk.keyID)","typ":"JWT"}"#)
        let payload = try JWS.verify(token, publicKeys: [jwk.keyID: key.publicKey])
        #expect(try JSONDecoder().decode(Claim.self, from: Data(payload)) == Claim(sub: "x", n: 7))
    }

    /// The header of `token` replaced by `json`, signature kept.
    static func withHeader(_ token: String, _ json: String) -> String {
        let parts = token.split(separator: ".")
        return Base64URL.encode(Array(json.utf8)) + "." + parts[1] + "." + parts[2]
    }

    @Test func jwsRejectsTampering() throws {
        let key = Curve25519.Signing.PrivateKey()
        let kid = JWK(publicKey: key.publicKey).keyID
        let keys = [kid: key.publicKey]
        let token = try JWS.sign(Claim(sub: "x", n: 7), key: key, kid: kid)
        let parts = token.split(separator: ".").map(String.init)

        func kind(_ t: String) -> JWSError.Code? {
            do { _ = try JWS.verify(t, publicKeys: keys, source: "token"); return nil } catch {
                return (error as? JWSError)?.code
            }
        }
        #expect(kind(token) == nil)
        // alg none (with and without a signature), and another algorithm.
        #expect(kind(Self.withHeader(token, #"{"alg":"none","kid":"\#(kid)"}"#)) == .badAlgorithm)
        #expect(
            kind(
                Self.withHeader(token, #"{"alg":"none"}"#).split(separator: ".").dropLast().joined(separator: ".") + "."
            ) == .malformed)
        #expect(kind(Self.withHeader(token, #"{"alg":"HS256","kid":"\#(kid)"}"#)) == .badAlgorithm)
        #expect(kind(Self.withHeader(token, #"{"alg":"EdDSA","kid":"\#(kid)","crit":["exp"]}"#)) == .badAlgorithm)
        // Wrong / missing kid.
        #expect(kind(Self.withHeader(token, #"{"alg":"EdDSA","kid":"other"}"#)) == .unknownKey)
        #expect(kind(Self.withHeader(token, #"{"alg":"EdDSA"}"#)) == .unknownKey)
        // A header edit that keeps alg and kid still breaks the signature.
        #expect(kind(Self.withHeader(token, #"{"alg":"EdDSA","kid":"\#(kid)","typ":"JOSE"}"#)) == .badSignature)
        // Every bit of the signature matters.
        var signature = try Base64URL.decode(parts[2])
        for bit in [0, 100, 511] {
            signature[bit / 8] ^= UInt8(1 << (bit % 8))
            #expect(kind(parts[0] + "." + parts[1] + "." + Base64URL.encode(signature)) == .badSignature)
            signature[bit / 8] ^= UInt8(1 << (bit % 8))
        }
        // An edited payload.
        let edited = Base64URL.encode(Array(#"{"n":8,"sub":"x"}"#.utf8))
        #expect(kind(parts[0] + "." + edited + "." + parts[2]) == .badSignature)
        // Shapes.
        #expect(kind(parts[0] + "." + parts[1]) == .malformed)
        #expect(kind(token + ".x") == .malformed)
        #expect(kind(parts[0] + "." + parts[1] + "." + parts[2] + "==") == .malformed)
        #expect(kind(parts[0] + "." + parts[1] + ".AAAA") == .malformed)
        // Another key's signature over the same kid.
        let other = try JWS.sign(Claim(sub: "x", n: 7), key: Curve25519.Signing.PrivateKey(), kid: kid)
        #expect(kind(other) == .badSignature)
        // Errors are one line naming the source.
        do {
            _ = try JWS.verify(Self.withHeader(token, #"{"alg":"none"}"#), publicKeys: keys, source: "ledger row 3")
        } catch let error as JWSError {
            #expect(error.description.hasPrefix("ledger row 3: "))
            #expect(!error.description.contains("\n"))
        }
    }

    @Test func jwkFilesRoundTripAndPrivateKeyModeIsChecked() throws {
        let dir = TemporaryDirectory()
        let privateJWK = JWK.newPrivateKey()
        let privatePath = dir.file("publisher.jwk"), publicPath = dir.file("publisher.public.jwk")
        try RegionFiles.writeAtomically(path: privatePath, bytes: Array(try privateJWK.jsonString().utf8), mode: 0o600)
        try RegionFiles.writeAtomically(
            path: publicPath, bytes: Array(try privateJWK.publicJWK.jsonString().utf8), mode: 0o644)
        let publicJWK = try JWK.read(path: publicPath)
        #expect(publicJWK.d == nil && publicJWK.kty == "OKP" && publicJWK.crv == "Ed25519")
        #expect(publicJWK.kid == JWK.thumbprint(x: publicJWK.x) && publicJWK == privateJWK.publicJWK)
        #expect(try JWK.read(path: privatePath, requirePrivate: true) == privateJWK)
        // A public key where a private one is required; a group-readable private key.
        #expect(throws: JWSError.self) { try JWK.read(path: publicPath, requirePrivate: true) }
        chmod(privatePath, 0o644)
        let loose = #expect(throws: JWSError.self) { try JWK.read(path: privatePath, requirePrivate: true) }
        #expect(loose?.code == .badKey)
        let garbage = try dir.write("bad.jwk", Array(#"{"kty":"RSA","crv":"Ed25519","x":"AAAA"}"#.utf8))
        #expect(thrown(JWSError.self) { try JWK.read(path: garbage) }?.code == .badKey)

        // The test App Store's CA keys are private files too; reopening keeps the CA.
        let store = try TestAppStore(directory: dir.file("store"), clock: FixedRegionClock(Self.t0))
        let keyPath = dir.file("store/TestAppStoreCA/leaf.key.pem")
        var info = stat()
        #expect(stat(keyPath, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try TestAppStore(directory: dir.file("store")).ca.rootCertificateDER == store.ca.rootCertificateDER)
        #expect(readFile(store.rootCertificatePath) == store.ca.rootCertificateDER)
        chmod(keyPath, 0o644)
        #expect(throws: LedgerError.self) { try TestAppStore(directory: dir.file("store")) }
    }

    // MARK: Transactions and entitlements

    @Test func buyThenEntitled() throws {
        let f = try Fixture()
        #expect(try f.owned().isEmpty)
        let bought = try f.buy("chamonix")
        let t = bought.payload
        #expect(t.environment == .sandbox && t.type == .nonConsumable && t.bundleId == RegionsFixture.bundleID)
        #expect(t.appAccountToken == f.account && t.productId == "chamonix")
        #expect(t.purchaseDate == Self.t0 && t.signedDate == Self.t0 && t.expiresDate == nil)
        #expect(t.originalTransactionId == bought.id && bought.id.count == 16)
        // App Store format: ES256 with the test CA's three certificates.
        let header = try JSONDecoder().decode(
            AppStoreJWSHeader.self, from: Data(try Base64URL.decode(bought.jws.split(separator: ".")[0])))
        #expect(header.alg == "ES256" && header.x5c?.count == 3)
        #expect(header.x5c?.last.flatMap { Data(base64Encoded: $0) }.map(Array.init) == f.store.ca.rootCertificateDER)

        #expect(try f.owned() == ["chamonix"])
        let entitlements = try f.ledger.entitlements(now: Self.t0 + 1000 * Self.day)
        #expect(
            entitlements == [
                Entitlement(
                    productID: "chamonix", type: .nonConsumable, transactionID: bought.id,
                    originalTransactionID: bought.id, purchaseDate: Self.t0, expiresDate: nil)
            ])
        let json = try JSONOutput.string(entitlements[0])
        #expect(
            json
                == #"{"expires_date":null,"original_transaction_id":"\#(bought.id)","product_id":"chamonix","purchase_date":1704067200000,"transaction_id":"\#(bought.id)","type":"Non-Consumable"}"#
        )
        // Another account owns nothing; the rows of ours are reported for it, not counted.
        let other = try f.ledger.report(account: Self.otherAccount, now: Self.t0)
        #expect(other.entitlements.isEmpty && other.rejected.map(\.reason) == [.otherAccount])
        #expect(other.verifiedTransactions == 0)
        let mine = try f.ledger.report(now: Self.t0)
        #expect(mine.problems.isEmpty && mine.verifiedTransactions == 1 && mine.account == f.account)
    }

    @Test func badArgumentsAreOneLineErrors() throws {
        let f = try Fixture()
        let empty = #expect(throws: LedgerError.self) { try f.store.purchase(f.shop.request("")) }
        #expect(empty?.code == .invalidArgument && empty?.description.hasPrefix("product id: ") == true)
        let newline = #expect(throws: LedgerError.self) { try f.store.purchase(f.shop.request("a\nb")) }
        #expect(newline?.description.contains("\n") == false)
        // A subscription needs a term; consumables are not sold.
        #expect(
            thrown(LedgerError.self) { try f.store.purchase(f.shop.request("x", type: .autoRenewable)) }?.code
                == .invalidArgument)
        #expect(
            thrown(LedgerError.self) { try f.store.purchase(f.shop.request("x", type: .consumable)) }?.code
                == .invalidArgument)
        let unknown = #expect(throws: LedgerError.self) { try f.store.refund(transactionID: "123", reason: 0) }
        #expect(unknown?.code == .notFound && unknown?.category == .notFound)
        let bought = try f.buy("chamonix")
        #expect(
            thrown(LedgerError.self) { try f.store.refund(transactionID: bought.id, reason: 7) }?.code
                == .invalidArgument)
        // A token that is not App Store signed data.
        let junk = #expect(throws: LedgerError.self) { try f.ledger.import(signed: ["a.b.c"]) }
        #expect(junk?.code == .rejected && junk?.verification == .malformed && junk?.category == .invalidInput)
        // A batch is verified whole before anything is written.
        let good = try f.shop.sell("zermatt")
        #expect(thrown(LedgerError.self) { try f.ledger.import(signed: [good, "x.y.z"]) }?.verification == .malformed)
        #expect(try f.owned() == ["chamonix"])
        // An account that StoreKit could not have given.
        let account = #expect(throws: LedgerError.self) {
            try EntitlementLedger(path: f.dir.file("other.sqlite"), verifier: f.verifier, account: "has space")
        }
        #expect(account?.code == .invalidArgument && !fileExists(f.dir.file("other.sqlite")))
    }

    @Test func subscriptionExpires() throws {
        let f = try Fixture()
        let bought = try f.buy("updates", type: .autoRenewable, period: "P1M")
        // P1M from 2024-01-01: 31 days.
        #expect(bought.payload.type == .autoRenewable && bought.payload.expiresDate == Self.t0 + 31 * Self.day)
        #expect(try f.owned(Self.t0 + 30 * Self.day) == ["updates"])
        #expect(try f.owned(Self.t0 + 31 * Self.day).isEmpty)
        // The memoized answer must not outlive an expiry boundary in either direction.
        let expiry = bought.payload.expiresDate ?? .distantPast
        for (now, entitled) in [
            (expiry - 0.001, true), (expiry, false), (expiry - 1, true), (Self.t0, true), (expiry + 1, false),
        ] {
            let report = try f.ledger.report(now: now)
            #expect(report.entitlements.isEmpty != entitled, "at \(now)")
            #expect(report.now == now.appStoreMilliseconds)
        }
        // Expired is not rejected: the row verifies, it just grants nothing now.
        let report = try f.ledger.report(now: Self.t0 + 32 * Self.day)
        #expect(report.rejected.isEmpty && report.verifiedTransactions == 1 && !report.clockRolledBack)
        // While it runs the store does not sell it again; once expired it does (a renewal).
        f.clock.set(Self.t0 + 20 * Self.day)
        #expect(
            try f.store.purchase(f.shop.request("updates", type: .autoRenewable, period: "P1M"))
                == .alreadyOwned(bought.jws))
        f.clock.set(Self.t0 + 31 * Self.day)
        let renewal = try f.buy("updates", type: .autoRenewable, period: "P1M")
        #expect(renewal.id != bought.id)
        let renewed = try f.ledger.entitlements(now: Self.t0 + 40 * Self.day)
        // 2024-02-01 + P1M = 2024-03-01 (a leap February).
        #expect(renewed.map(\.productID) == ["updates"] && renewed[0].expiresDate == Self.t0 + 60 * Self.day)
        #expect(renewed[0].transactionID == renewal.id)
    }

    @Test func refundRemovesTheEntitlement() throws {
        let f = try Fixture()
        _ = try f.buy("chamonix")
        let refunded = try f.buy("zermatt")
        let revocation = try f.store.refund(transactionID: refunded.id, reason: 0)
        let revoked = try f.verifier.verifyTransaction(revocation, source: "refund")
        #expect(revoked.transactionId == refunded.id && revoked.revocationDate != nil && revoked.revocationReason == 0)
        #expect((revoked.signedDate ?? .distantPast) > (refunded.payload.signedDate ?? .distantFuture))
        #expect(try f.ledger.import(signed: [revocation]) == LedgerImportSummary(replaced: 1))
        #expect(try f.owned() == ["chamonix"])
        // Refunding twice returns the same revocation and charges nothing back twice.
        #expect(try f.store.refund(transactionID: refunded.id, reason: 0) == revocation)
        #expect(try f.shop.storeCount() == 2)
        #expect(try f.ledger.import(signed: [revocation]) == LedgerImportSummary(unchanged: 1))
        // The refund is an update the device has not finished yet.
        #expect(
            try f.store.unfinishedTransactions(account: f.account, bundleID: RegionsFixture.bundleID).contains(
                revocation))
        #expect(try f.owned() == ["chamonix"])
    }

    @Test func reimportingTheOriginalPurchaseDoesNotUndoARefund() throws {
        let f = try Fixture()
        let bought = try f.buy("zermatt")
        let revocation = try f.store.refund(transactionID: bought.id, reason: 1)
        try f.ledger.import(signed: [revocation])
        #expect(try f.ledger.import(signed: [bought.jws]) == LedgerImportSummary(unchanged: 1))
        #expect(try f.owned().isEmpty)
        // In one batch, in either order.
        #expect(try f.ledger.import(signed: [bought.jws, revocation]) == LedgerImportSummary(unchanged: 2))
        #expect(try f.owned().isEmpty)
        // Overlaid in memory, too.
        try f.ledger.overlay([bought.jws])
        #expect(try f.owned().isEmpty)
    }

    @Test func importingTheStoresListIsIdempotentAndRepairsDamagedRows() throws {
        let f = try Fixture()
        _ = try f.shop.sell("chamonix")
        let sub = try f.shop.sell("updates", type: .autoRenewable, period: "P1D")
        _ = try f.shop.sell("zermatt", account: Self.otherAccount)
        _ = try f.store.refund(transactionID: try f.shop.transactionID(sub), reason: 0)
        let list = try f.store.transactions(account: f.account, bundleID: RegionsFixture.bundleID)
        #expect(list.count == 2)
        #expect(try f.ledger.import(signed: list) == LedgerImportSummary(inserted: 2))
        let rows = try Self.dump(f.ledger.path, tables: ["transactions"])
        #expect(try f.ledger.import(signed: list) == LedgerImportSummary(unchanged: 2))
        #expect(try Self.dump(f.ledger.path, tables: ["transactions"]) == rows)
        #expect(try f.owned() == ["chamonix"])
        // A damaged row grants nothing and is repaired by the next import.
        try f.sql("UPDATE transactions SET jws = 'x.y.z' WHERE product_id = 'chamonix'")
        #expect(try f.owned().isEmpty)
        #expect(Self.reasons(try f.ledger.report(now: Self.t0)) == ["unverified(malformed)"])
        #expect(try f.ledger.import(signed: list) == LedgerImportSummary(replaced: 1, unchanged: 1))
        #expect(try Self.dump(f.ledger.path, tables: ["transactions"]) == rows)
        #expect(try f.owned() == ["chamonix"])
    }

    // MARK: What the ledger refuses to count

    /// Each way of changing the one row of a ledger owning "chamonix", and what the report
    /// says about it. Nothing is granted by any of them.
    @Test func tamperedRowsAreRejectedAndReported() throws {
        let f = try Fixture()
        let bought = try f.buy("chamonix")
        let parts = bought.jws.split(separator: ".").map(String.init)

        func rejection(after edit: () throws -> Void) throws -> [String] {
            try edit()
            let report = try f.ledger.report(now: Self.t0)
            #expect(report.entitlements.isEmpty, "granted \(report.entitlements)")
            #expect(report.problems.allSatisfy { !$0.contains("\n") })
            try f.sql("DELETE FROM transactions")
            try f.ledger.import(signed: [bought.jws])
            #expect(try f.owned() == ["chamonix"])
            return Self.reasons(report)
        }
        func rejection(after sql: String) throws -> [String] { try rejection { try f.sql(sql) } }
        func setJWS(_ jws: String) -> String { "UPDATE transactions SET jws = '\(jws)'" }

        // The payload edited (another product), the signature kept.
        var edited = bought.payload
        edited.productId = "zermatt"
        let editedPayload = Base64URL.encode(Array(try JSONOutput.string(edited).utf8))
        #expect(
            try rejection(
                after:
                    "UPDATE transactions SET product_id = 'zermatt', jws = '\(parts[0]).\(editedPayload).\(parts[2])'")
                == ["unverified(signature)"])
        // A signature bit flipped.
        var signature = try Base64URL.decode(parts[2])
        signature[5] ^= 0x10
        #expect(
            try rejection(after: setJWS("\(parts[0]).\(parts[1]).\(Base64URL.encode(signature))")) == [
                "unverified(signature)"
            ])
        // Values far larger than any token (64 MiB of jws, a 1 MiB product id): cut when read,
        // never allocated whole, and rejected.
        #expect(
            try rejection(after: "UPDATE transactions SET jws = jws || hex(zeroblob(32 * 1024 * 1024))") == [
                "unverified(malformed)"
            ])
        #expect(
            try rejection(after: "UPDATE transactions SET product_id = product_id || hex(zeroblob(512 * 1024))") == [
                "columnMismatch"
            ])
        // A column edited, the signed blob intact: the column disagrees with what was signed.
        #expect(try rejection(after: "UPDATE transactions SET account = '\(Self.otherAccount)'") == ["columnMismatch"])
        #expect(
            try rejection(
                after: "UPDATE transactions SET type = 'Auto-Renewable Subscription', expires_date = 253402300799999")
                == ["columnMismatch"])
        #expect(try rejection(after: "UPDATE transactions SET product_id = 'zermatt'") == ["columnMismatch"])
        // Signed by another test App Store (its own CA, not pinned).
        let rogue = try TestAppStore(directory: f.dir.file("rogue"), clock: f.clock)
        let rogueJWS = try rogue.purchase(f.shop.request("chamonix")).jws
        #expect(try rejection(after: setJWS(rogueJWS)) == ["unverified(chain)"])
        #expect(thrown(LedgerError.self) { try f.ledger.import(signed: [rogueJWS]) }?.verification == .chain)
        // ... naming our root as its x5c root changes nothing: the token's own root is ignored.
        let ourRoot = rogue.ca.signer.withCertificateChain([
            rogue.ca.leafCertificateDER, rogue.ca.intermediateCertificateDER,
            f.store.ca.rootCertificateDER,
        ])
        #expect(try rejection(after: setJWS(try ourRoot.sign(bought.payload))) == ["unverified(chain)"])
        // ... and our certificates with its key fail the signature.
        let ourChain = rogue.ca.signer.withCertificateChain([
            f.store.ca.leafCertificateDER, f.store.ca.intermediateCertificateDER,
            f.store.ca.rootCertificateDER,
        ])
        #expect(try rejection(after: setJWS(try ourChain.sign(bought.payload))) == ["unverified(signature)"])
        // Our store, another app.
        let otherApp = try f.shop.sell("chamonix", bundleID: "com.example.other")
        #expect(try rejection(after: setJWS(otherApp)) == ["unverified(bundle)"])
        #expect(thrown(LedgerError.self) { try f.ledger.import(signed: [otherApp]) }?.verification == .bundle)
        // Our CA, an environment the app does not accept.
        var production = bought.payload
        production.environment = .production
        #expect(try rejection(after: setJWS(try f.store.ca.sign(production))) == ["unverified(environment)"])
        // alg none, and an earlier tilepack's Ed25519 token.
        let none = Base64URL.encode(Array(#"{"alg":"none","x5c":[]}"#.utf8))
        #expect(try rejection(after: setJWS("\(none).\(parts[1]).\(parts[2])")) == ["unverified(malformed)"])
        let key = Curve25519.Signing.PrivateKey()
        let ed25519 = try JWS.sign(bought.payload, key: key, kid: JWK(publicKey: key.publicKey).keyID)
        #expect(try rejection(after: setJWS(ed25519)) == ["unverified(malformed)"])
        // Another account's genuine transaction put in our row: its columns then disagree with it...
        let theirs = try f.shop.sell("zermatt", account: Self.otherAccount)
        #expect(try rejection(after: setJWS(theirs)) == ["columnMismatch"])
        // ... and a row that is wholly theirs is theirs.
        #expect(
            try rejection {
                try f.sql("DELETE FROM transactions"); try f.ledger.import(signed: [theirs])
            } == ["otherAccount"])
    }

    /// Seeded by construction: every column of every row set to each of a fixed list of
    /// values (and to every other row's value), on a ledger whose account owns nothing now.
    @Test func noSQLUpdateOfAnyColumnGrantsAnything() throws {
        // A refund, an expired subscription, another account's purchase.
        let f = try Fixture()
        let refunded = try f.buy("chamonix")
        try f.ledger.import(signed: [try f.store.refund(transactionID: refunded.id, reason: 0)])
        _ = try f.buy("updates", type: .autoRenewable, period: "P1D")
        try f.ledger.import(signed: [try f.shop.sell("zermatt", account: Self.otherAccount)])
        let now = Self.t0 + 2 * Self.day
        #expect(try f.owned(now).isEmpty)
        #expect(try Self.dump(f.ledger.path, tables: ["transactions"]).count == 3)
        let values = [
            "NULL", "0", "-1", "9223372036854775807", "253402300799999", "''", "'chamonix'", "'zermatt'", "'updates'",
            "'\(f.account)'", "'\(Self.otherAccount)'", "'Sandbox'", "'Non-Consumable'",
            "'Auto-Renewable Subscription'",
            "x'00'", "1.5",
        ]
        let columns = [
            "transaction_id", "original_transaction_id", "product_id", "account", "type", "purchase_date",
            "expires_date", "revocation_date", "signed_date", "jws",
        ]
        var tried = 0
        for column in columns {
            for value in values {
                let ledgerCopy = f.dir.file("edit.sqlite")
                unlink(ledgerCopy); unlink(ledgerCopy + "-wal"); unlink(ledgerCopy + "-shm")
                let db = try SQLiteConnection(path: f.ledger.path, mode: .readWriteCreate)
                try db.execute("VACUUM INTO '\(ledgerCopy)'")
                let copy = try SQLiteConnection(path: ledgerCopy, mode: .readWriteCreate)
                // Each UPDATE may violate NOT NULL or the primary key; those the database refuses itself.
                try? copy.execute("UPDATE transactions SET \(column) = \(value)")
                try? copy.execute("UPDATE meta SET value = \(value) WHERE key = 'observed_ms'")
                try? copy.execute("UPDATE meta SET value = \(value) WHERE key = 'account'")
                // A ledger that refuses to open (a garbled account) grants nothing either.
                let edited = try? EntitlementLedger(
                    path: ledgerCopy, verifier: f.verifier, account: f.account, clock: FixedRegionClock(now))
                let granted = (try? edited?.entitlements(now: now)) ?? []
                #expect(granted.isEmpty, "UPDATE \(column) = \(value) granted \(granted)")
                tried += 1
            }
        }
        // Each row separately too: one column of one row, with values from the other rows.
        let db = try SQLiteConnection(path: f.ledger.path, mode: .readWriteCreate)
        for column in columns {
            for source in 1...3 {
                for target in 1...3 where target != source {
                    let nth = { (n: Int) in "(SELECT rowid FROM transactions ORDER BY rowid LIMIT 1 OFFSET \(n - 1))" }
                    try? db.execute(
                        """
                        UPDATE transactions SET \(column) = (SELECT \(column) FROM transactions WHERE rowid = \
                        \(nth(source))) WHERE rowid = \(nth(target))
                        """
                    )
                    #expect(try f.owned(now).isEmpty, "copying \(column) from row \(source) to \(target)")
                    tried += 1
                }
            }
        }
        #expect(tried == columns.count * values.count + columns.count * 6)
    }

    // MARK: Clock

    @Test func clockRollbackExpiresSubscriptionsAndDeletingMetaKeepsTheSignedFloor() throws {
        let f = try Fixture()
        _ = try f.buy("chamonix")
        _ = try f.buy("updates", type: .autoRenewable, period: "P1Y")
        let honest = try f.ledger.report(now: Self.t0)
        #expect(honest.entitlements.map(\.productID) == ["chamonix", "updates"] && !honest.clockRolledBack)
        // The device saw t0 + 2 years (the subscription had expired), then the clock went back to t0.
        let seen = Self.t0 + 730 * Self.day
        f.clock.set(seen)
        try f.ledger.observe()
        #expect(try f.owned(seen) == ["chamonix"])
        let rolled = try f.ledger.report(now: Self.t0)
        #expect(rolled.clockRolledBack && rolled.watermark == Self.ms(seen))
        #expect(rolled.entitlements.map(\.productID) == ["chamonix"])
        #expect(rolled.problems.first?.hasPrefix("clock rolled back") == true)
        // Another process on the same file sees the same observed time.
        let other = try EntitlementLedger(
            path: f.ledger.path, verifier: f.verifier, clock: FixedRegionClock(Self.t0), mode: .readOnly)
        #expect(try other.report(now: Self.t0).clockRolledBack)
        // Within the tolerance (clocks of two machines) is not a rollback.
        #expect(try !f.ledger.report(now: seen - 60).clockRolledBack)
        #expect(try f.ledger.report(now: seen - Double(EntitlementLedger.clockTolerance) / 1000 - 1).clockRolledBack)

        // A later refund is the newest signed date.
        f.clock.set(Self.t0 + 10 * Self.day)
        let refunded = try f.buy("zermatt")
        let revocation = try f.store.refund(transactionID: refunded.id, reason: 0)
        try f.ledger.import(signed: [revocation])
        let newestSigned = try #require(try f.verifier.verifyTransaction(revocation, source: "t").signedDate)
            .appStoreMilliseconds
        #expect(newestSigned >= Self.ms(Self.t0 + 10 * Self.day))
        // Deleting meta loses the observed time, but not below the newest verified signed date.
        try f.sql("DELETE FROM meta")
        let floor = try f.ledger.report(now: Self.t0 + 5 * Self.day)
        #expect(floor.clockRolledBack && floor.watermark == newestSigned)
        #expect(floor.entitlements.map(\.productID) == ["chamonix"])
        let after = try f.ledger.report(now: Self.t0 + 11 * Self.day)
        #expect(!after.clockRolledBack && after.watermark == newestSigned)
        #expect(after.entitlements.map(\.productID) == ["chamonix", "updates"])
        // Dropping the table changes nothing either.
        try f.sql("DROP TABLE meta")
        #expect(try f.ledger.report(now: Self.t0 + 5 * Self.day).watermark == newestSigned)
        // Deleting the refund row too: this ledger remembers the revocation it verified; a new
        // process falls back to the newest signed date still in the file (the purchases', t0).
        try f.sql("DELETE FROM transactions WHERE product_id = 'zermatt'")
        #expect(try f.ledger.report(now: Self.t0 + 5 * Self.day).watermark == newestSigned)
        let fresh = try EntitlementLedger(
            path: f.ledger.path, verifier: f.verifier, account: f.account, clock: FixedRegionClock(Self.t0))
        #expect(try fresh.report(now: Self.t0).watermark == Self.ms(Self.t0))
    }

    // MARK: Read-only opens and earlier ledgers

    @Test func readOnlyOpensWriteNothing() throws {
        let shop = try TestStoreFixture()
        let path = shop.dir.file("ledger.sqlite")
        let bought = try shop.sell("chamonix")
        do {
            let writer = try EntitlementLedger(
                path: path, verifier: shop.verifier, account: Self.account, clock: shop.clock)
            try writer.import(signed: [bought])
        }
        // A missing ledger is an empty one, and no file appears.
        let missing = shop.dir.file("missing.sqlite")
        let empty = try EntitlementLedger(
            path: missing, verifier: shop.verifier, account: Self.account, clock: shop.clock, mode: .readOnly)
        #expect(try empty.report(now: Self.t0).entitlements.isEmpty && !empty.accountWasDrawn)
        try empty.observe()
        try empty.recordAcceptedCatalog(serial: 1, jws: "x")
        #expect(thrown(LedgerError.self) { try empty.import(signed: [bought]) }?.code == .storage)
        #expect(!fileExists(missing) && !fileExists(missing + "-wal") && !fileExists(missing + "-shm"))

        // An existing ledger: read, observe, overlay, refuse imports; its bytes stay as they were.
        let before = readFile(path)
        let listing = shop.dir.listing()
        shop.clock.set(Self.t0 + 100 * Self.day)
        let reader = try EntitlementLedger(path: path, verifier: shop.verifier, clock: shop.clock, mode: .readOnly)
        #expect(reader.account == Self.account && !reader.accountWasDrawn)
        #expect(try reader.entitlements().map(\.productID) == ["chamonix"])
        try reader.observe()
        try reader.recordAcceptedCatalog(serial: 9, jws: "y")
        #expect(reader.acceptedCatalog() == nil)
        #expect(thrown(LedgerError.self) { try reader.import(signed: [bought]) }?.code == .storage)
        // The store's refund, held in memory: counted, not written.
        let revocation = try shop.store.refund(transactionID: try shop.transactionID(bought), reason: 0)
        try reader.overlay([revocation])
        #expect(try reader.entitlements().isEmpty)
        #expect(try reader.report().verifiedTransactions == 1)
        #expect(readFile(path) == before)
        // SQLite's read-only WAL reader may leave an empty -wal and the -shm index beside the
        // file (it needs them to see other processes' commits); no frame is ever written.
        #expect(
            shop.dir.listing().filter { !$0.hasPrefix("ledger.sqlite-") }
                == listing.filter { !$0.hasPrefix("ledger.sqlite-") })
        #expect(!fileExists(path + "-wal") || readFile(path + "-wal").isEmpty)
        // A read-write open of the same file still sees only the purchase (nothing was written).
        let writer = try EntitlementLedger(path: path, verifier: shop.verifier, clock: shop.clock)
        #expect(try writer.entitlements().map(\.productID) == ["chamonix"])
    }

    @Test func anEarlierTilepacksLedgerIsRefusedUntilUpgraded() throws {
        let shop = try TestStoreFixture()
        let path = shop.dir.file("old.sqlite")
        try LegacyRecords.writeLedger(path: path, account: "acct-legacy")
        let before = readFile(path)
        for mode in [EntitlementLedger.OpenMode.readWrite, .readOnly] {
            let refused = #expect(throws: LedgerError.self) {
                try EntitlementLedger(path: path, verifier: shop.verifier, mode: mode)
            }
            #expect(refused?.code == .legacyLedger && refused?.category == .invalidInput, "\(mode)")
            #expect(
                refused?.description.contains("run tilepack store restore") == true
                    && refused?.description.hasPrefix(path) == true)
        }
        #expect(readFile(path) == before)
        // Upgrading keeps the account and empties what cannot be verified any more.
        let upgraded = try EntitlementLedger(
            path: path, verifier: shop.verifier, clock: shop.clock, mode: .upgradingLegacy)
        #expect(upgraded.account == "acct-legacy" && !upgraded.accountWasDrawn)
        let report = try upgraded.report(now: Self.t0)
        #expect(report.verifiedTransactions == 0 && report.rejected.isEmpty)
        // Now a current ledger: it opens as one.
        let reopened = try EntitlementLedger(path: path, verifier: shop.verifier, clock: shop.clock, mode: .readOnly)
        #expect(reopened.account == "acct-legacy")
        // Another schema version is a storage error, not a legacy one.
        let future = shop.dir.file("future.sqlite")
        try SQLiteConnection(path: future, mode: .readWriteCreate).execute(
            """
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('schema_version', '3');
            """)
        let newer = #expect(throws: LedgerError.self) {
            try EntitlementLedger(path: future, verifier: shop.verifier, mode: .upgradingLegacy)
        }
        #expect(newer?.code == .storage && newer?.category == .unsupported)
    }

    @Test func theAcceptedCatalogSerialNeverGoesDown() throws {
        let f = try Fixture()
        #expect(f.ledger.acceptedCatalog() == nil)
        try f.ledger.recordAcceptedCatalog(serial: 3, jws: "three")
        try f.ledger.recordAcceptedCatalog(serial: 2, jws: "two")
        #expect(f.ledger.acceptedCatalog()?.serial == 3 && f.ledger.acceptedCatalog()?.jws == "three")
        try f.ledger.recordAcceptedCatalog(serial: 5, jws: "five")
        let reopened = try EntitlementLedger(path: f.ledger.path, verifier: f.verifier, mode: .readOnly)
        #expect(reopened.acceptedCatalog()?.serial == 5 && reopened.acceptedCatalog()?.jws == "five")
    }

    // MARK: Concurrency and interruption

    @Test func eightConcurrentPurchasersLoseAndDuplicateNothing() throws {
        let f = try Fixture()
        let perThread = 5
        let failures = ThreadFailures()
        let done = DispatchGroup()
        // Threads, each with its own store and ledger connection (as separate processes would have).
        for t in 0..<8 {
            done.enter()
            let storeDir = f.shop.storeDirectory, ledgerPath = f.ledger.path, verifier = f.verifier
            let thread = Thread {
                defer { done.leave() }
                do {
                    let store = try TestAppStore(directory: storeDir, clock: FixedRegionClock(Self.t0))
                    let ledger = try EntitlementLedger(
                        path: ledgerPath, verifier: verifier, account: Self.account,
                        clock: FixedRegionClock(Self.t0))
                    for i in 0..<perThread {
                        let signed = try store.purchase(RegionsFixture.request("region-\(t)-\(i)")).jws
                        try ledger.import(signed: [signed])
                        // A second import (a retry) must not count twice.
                        try ledger.import(signed: [signed])
                    }
                    _ = try ledger.import(
                        signed: try store.transactions(account: Self.account, bundleID: RegionsFixture.bundleID))
                } catch {
                    failures.add("\(error)")
                }
            }
            thread.start()
        }
        done.wait()
        #expect(failures.all == [])
        let entitled = try f.ledger.entitlements(now: Self.t0)
        #expect(entitled.count == 8 * perThread)
        #expect(
            Set(entitled.map(\.productID)) == Set((0..<8).flatMap { t in (0..<perThread).map { "region-\(t)-\($0)" } }))
        #expect(Set(entitled.map(\.transactionID)).count == 8 * perThread)
        #expect(try f.shop.storeCount() == 8 * perThread)
        #expect(try Self.dump(f.ledger.path, tables: ["transactions"]).count == 8 * perThread)
    }

    @Test func sharedInstancesAreSafeAcrossThreads() throws {
        let f = try Fixture()
        let done = DispatchGroup()
        let failures = ThreadFailures()
        for t in 0..<8 {
            done.enter()
            let store = f.store, ledger = f.ledger
            Thread {
                defer { done.leave() }
                do {
                    try ledger.import(signed: [try store.purchase(RegionsFixture.request("p\(t)")).jws])
                    _ = try ledger.entitlements(now: Self.t0)
                } catch {
                    failures.add("\(error)")
                }
            }.start()
        }
        done.wait()
        #expect(failures.all == [])
        #expect(try f.owned().count == 8)
    }

    /// A writer that dies mid-import (its connection dropped inside an open write
    /// transaction, which is what SQLite sees when a process is killed) leaves the ledger as
    /// it was, and the purchase is still at the store, unfinished.
    @Test func interruptedWriteLeavesTheLedgerConsistent() throws {
        let f = try Fixture()
        _ = try f.buy("chamonix")
        let before = try Self.dump(f.ledger.path)
        let signed = try f.shop.sell("zermatt")
        let t = try f.verifier.verifyTransaction(signed, source: "t")
        let id = try #require(t.transactionId)
        do {
            let writer = try SQLiteConnection(path: f.ledger.path, mode: .readWriteCreate)
            try writer.execute("BEGIN IMMEDIATE")
            try writer.execute(
                """
                INSERT INTO transactions VALUES ('\(id)', '\(id)', 'zermatt', '\(f.account)', 'Non-Consumable',
                    \(t.purchaseDate?.appStoreMilliseconds ?? 0), NULL, NULL, \(t.signedDate?.appStoreMilliseconds ?? 0), '\(signed)')
                """)
            // Half done. The connection goes without COMMIT.
            #expect(writer.isInTransaction)
        }
        // Another process (here: another connection) sees the state before the purchase, and can write.
        let reopened = try EntitlementLedger(
            path: f.ledger.path, verifier: f.verifier, clock: FixedRegionClock(Self.t0))
        #expect(try Self.dump(f.ledger.path) == before)
        let report = try reopened.report(now: Self.t0)
        #expect(report.entitlements.map(\.productID) == ["chamonix"] && report.rejected.isEmpty)
        let integrity = try SQLiteConnection(path: f.ledger.path, mode: .readOnly).prepare("PRAGMA integrity_check")
        #expect(try integrity.step() && integrity.string(at: 0) == "ok")
        // The purchase is still at the store, unfinished: importing what is pending completes it.
        let pending = try f.store.unfinishedTransactions(account: f.account, bundleID: RegionsFixture.bundleID)
        #expect(pending.contains(signed))
        #expect(try reopened.import(signed: pending) == LedgerImportSummary(inserted: 1, unchanged: 1))
        #expect(try reopened.entitlements(now: Self.t0).map(\.productID) == ["chamonix", "zermatt"])
    }

    @Test func cachedReadsSeeOtherConnectionsWrites() throws {
        let f = try Fixture()
        #expect(try f.owned().isEmpty)
        let token = try f.ledger.changeToken()
        #expect(try f.ledger.changeToken() == token)
        let other = try EntitlementLedger(path: f.ledger.path, verifier: f.verifier, clock: FixedRegionClock(Self.t0))
        try other.import(signed: [try f.shop.sell("chamonix")])
        #expect(try f.ledger.changeToken() != token)
        #expect(try f.owned() == ["chamonix"])
        // Timing of the cached path (reported, not asserted: the machine is shared).
        let clock = ContinuousClock()
        let n = 2000
        let elapsed = try clock.measure {
            for _ in 0..<n { _ = try f.ledger.entitlements(now: Self.t0) }
        }
        print("ledger: cached entitlements \(elapsed / n) per call")
    }
}
