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

/// The purchases half of the region store: JWS/JWK, signed transactions, the store
/// simulator and the entitlement ledger (derived entitlements, tampering, clock, concurrency).
@Suite struct RegionsLedgerTests {
    /// Errors collected from threads.
    final class Failures: Sendable {
        private let list = Mutex<[String]>([])
        func add(_ message: String) { list.withLock { $0.append(message) } }
        var all: [String] { list.withLock { $0 } }
    }

    /// 2024-01-01T00:00:00Z: the tests' "now".
    static let t0 = 1_704_067_200.0
    static let day = 86_400.0

    /// A simulator and a ledger in one scratch directory, both on a fixed clock.
    struct Fixture {
        let dir = TemporaryDirectory()
        let store: StoreSimulator
        let ledger: EntitlementLedger
        let account = "acct-test"

        init(clock: Double = RegionsLedgerTests.t0) throws {
            store = try StoreSimulator(directory: dir.file("simulator"), clock: FixedRegionClock(clock))
            ledger = try EntitlementLedger(path: dir.file("ledger.sqlite"), publicKeys: [try JWK.read(path: store.publicKeyPath)],
                                           account: account, clock: FixedRegionClock(clock))
        }

        func buy(_ product: String, period: Duration? = nil) throws -> TransactionPayload {
            let signed = try store.purchase(productID: product, account: account, period: period)
            try ledger.import(signed: signed)
            return try ledger.verifier.verify(signed)
        }

        /// A raw connection on the ledger file, as someone editing it by hand.
        func sql(_ statement: String) throws {
            let db = try SQLiteConnection(path: ledger.path, mode: .readWriteCreate)
            try db.execute(statement)
        }
    }

    // MARK: base64url and JWS

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

        func kind(_ t: String) -> JWSError.Kind? {
            do { _ = try JWS.verify(t, publicKeys: keys, source: "token"); return nil } catch { return error.kind }
        }
        #expect(kind(token) == nil)
        // alg none (with and without a signature), and another algorithm.
        #expect(kind(Self.withHeader(token, #"{"alg":"none","kid":"\#(kid)"}"#)) == .badAlgorithm)
        #expect(kind(Self.withHeader(token, #"{"alg":"none"}"#).split(separator: ".").dropLast().joined(separator: ".") + ".") == .malformed)
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
        do { _ = try JWS.verify(Self.withHeader(token, #"{"alg":"none"}"#), publicKeys: keys, source: "ledger row 3") } catch {
            #expect(error.description.hasPrefix("ledger row 3: "))
            #expect(!error.description.contains("\n"))
        }
    }

    @Test func jwkFilesRoundTripAndPrivateKeyModeIsChecked() throws {
        let dir = TemporaryDirectory()
        let store = try StoreSimulator(directory: dir.file("sim"), clock: FixedRegionClock(Self.t0))
        let publicJWK = try JWK.read(path: store.publicKeyPath)
        #expect(publicJWK.d == nil && publicJWK.kty == "OKP" && publicJWK.crv == "Ed25519")
        #expect(publicJWK.kid == JWK.thumbprint(x: publicJWK.x))
        var info = stat()
        #expect(stat(store.privateKeyPath, &info) == 0 && info.st_mode & 0o777 == 0o600)
        let privateJWK = try JWK.read(path: store.privateKeyPath, requirePrivate: true)
        #expect(privateJWK.publicJWK == publicJWK)
        // Reopening keeps the key; a group-readable private key is refused.
        #expect(try StoreSimulator(directory: dir.file("sim")).publicKey == publicJWK)
        chmod(store.privateKeyPath, 0o644)
        #expect(throws: LedgerError.self) { try StoreSimulator(directory: dir.file("sim")) }
        let garbage = try dir.write("bad.jwk", Array(#"{"kty":"RSA","crv":"Ed25519","x":"AAAA"}"#.utf8))
        #expect { try JWK.read(path: garbage) } throws: { ($0 as? JWSError)?.kind == .badKey }
    }

    /// When TILEPACK_WRITE_JWS=DIR is set, writes a signed transaction (token.jws) and the
    /// public key (public.jwk) there, for Scripts/jws-check to verify with PyJWT.
    @Test func writeTokenForPyJWTWhenAsked() throws {
        guard let out = ProcessInfo.processInfo.environment["TILEPACK_WRITE_JWS"] else { return }
        let f = try Fixture()
        let signed = try f.store.purchase(productID: "mont-blanc-north", account: f.account, period: .seconds(30 * 86_400))
        try RegionFiles.makeDirectories(out)
        writeFile(out + "/token.jws", Array(signed.jws.utf8))
        writeFile(out + "/public.jwk", readFile(f.store.publicKeyPath))
    }

    // MARK: Transactions and entitlements

    @Test func buyThenEntitled() throws {
        let f = try Fixture()
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0).isEmpty)
        let payload = try f.buy("chamonix")
        #expect(payload.environment == "LocalSimulator" && payload.type == .nonConsumable)
        #expect(payload.purchaseDate == Int64(Self.t0 * 1000) && payload.expiresDate == nil)
        #expect(payload.transactionId == payload.originalTransactionId && payload.transactionId.count == 16)
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0) == ["chamonix"])
        #expect(f.ledger.entitledProductIDs() == ["chamonix"])
        let entitlements = try f.ledger.entitlements(account: f.account, now: Self.t0 + 1000 * Self.day)
        #expect(entitlements == [Entitlement(productID: "chamonix", transactionID: payload.transactionId,
                                             originalTransactionID: payload.transactionId,
                                             purchaseDate: payload.purchaseDate, expiresDate: nil)])
        let json = try JSONOutput.string(entitlements[0])
        #expect(json == #"{"expires_date":null,"original_transaction_id":"\#(payload.transactionId)","product_id":"chamonix","purchase_date":1704067200000,"transaction_id":"\#(payload.transactionId)"}"#)
        // Another account owns nothing; its rows are reported, not counted.
        let other = try f.ledger.report(account: "acct-other", now: Self.t0)
        #expect(other.entitlements.isEmpty && other.rejected.map(\.reason) == [.otherAccount])
        #expect(try f.ledger.report(account: f.account, now: Self.t0).problems.isEmpty)
    }

    @Test func badArgumentsAreOneLineErrors() throws {
        let f = try Fixture()
        #expect { _ = try f.store.purchase(productID: "", account: f.account) } throws: {
            ($0 as? LedgerError)?.kind == .invalidArgument && "\($0)".hasPrefix("product id: ")
        }
        #expect { _ = try f.store.purchase(productID: "a\nb", account: f.account) } throws: { "\($0)".split(separator: "\n").count == 1 }
        #expect { _ = try f.store.purchase(productID: "x", account: f.account, period: .zero) } throws: { ($0 as? LedgerError)?.kind == .invalidArgument }
        #expect { _ = try f.store.refund(transactionID: "123") } throws: {
            ($0 as? LedgerError)?.kind == .notFound && ($0 as? LedgerError)?.category == .notFound
        }
        #expect { try f.ledger.import(signed: SignedTransaction(jws: "a.b.c")) } throws: { ($0 as? LedgerError)?.jwsKind == .malformed }
    }

    @Test func subscriptionExpires() throws {
        let f = try Fixture()
        let payload = try f.buy("updates", period: .seconds(30 * 86_400))
        #expect(payload.type == .autoRenewable && payload.expiresDate == payload.purchaseDate + 30 * 86_400_000)
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0 + 29 * Self.day) == ["updates"])
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0 + 30 * Self.day).isEmpty)
        // The memoized answer must not outlive an expiry boundary in either direction.
        let expiry = Double(payload.expiresDate ?? 0) / 1000
        for (now, entitled) in [(expiry - 0.001, true), (expiry, false), (expiry - 1, true), (Self.t0, true), (expiry + 1, false)] {
            let report = try f.ledger.report(account: f.account, now: now)
            #expect(report.entitlements.isEmpty != entitled, "at \(now)")
            #expect(report.now == Int64(now * 1000))
        }
        // Expired is not rejected: the row verifies, it just grants nothing now.
        let report = try f.ledger.report(account: f.account, now: Self.t0 + 31 * Self.day)
        #expect(report.rejected.isEmpty && report.verifiedTransactions == 1 && !report.clockRolledBack)
        // A renewal (a new purchase) extends it.
        let later = try StoreSimulator(directory: f.dir.file("simulator"), clock: FixedRegionClock(Self.t0 + 29 * Self.day))
        try f.ledger.import(signed: try later.purchase(productID: "updates", account: f.account, period: .seconds(30 * 86_400)))
        let renewed = try f.ledger.entitlements(account: f.account, now: Self.t0 + 40 * Self.day)
        #expect(renewed.map(\.productID) == ["updates"] && renewed[0].expiresDate == Int64((Self.t0 + 59 * Self.day) * 1000))
    }

    @Test func refundRemovesTheEntitlement() throws {
        let f = try Fixture()
        let kept = try f.buy("chamonix")
        let refunded = try f.buy("zermatt")
        let revocation = try f.store.refund(transactionID: refunded.transactionId)
        let revoked = try f.ledger.verifier.verify(revocation)
        #expect(revoked.transactionId == refunded.transactionId && revoked.revocationDate != nil && revoked.revocationReason == 0)
        let summary = try f.ledger.import(signed: revocation)
        #expect(summary == LedgerImportSummary(replaced: 1))
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0) == ["chamonix"])
        // Refunding twice returns the same revocation; the original purchase blob cannot undo it.
        #expect(try f.store.refund(transactionID: refunded.transactionId) == revocation)
        #expect(try f.store.transactions(account: f.account).count == 2)
        #expect(kept.revocationDate == nil)
        #expect(try f.ledger.import(signed: revocation) == LedgerImportSummary(unchanged: 1))
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0) == ["chamonix"])
    }

    @Test func reimportingTheOriginalPurchaseDoesNotUndoARefund() throws {
        let f = try Fixture()
        let signed = try f.store.purchase(productID: "zermatt", account: f.account)
        try f.ledger.import(signed: signed)
        let id = try f.ledger.verifier.verify(signed).transactionId
        try f.ledger.import(signed: try f.store.refund(transactionID: id))
        #expect(try f.ledger.import(signed: signed) == LedgerImportSummary(unchanged: 1))
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0).isEmpty)
    }

    /// Every row of the ledger file, as text, in rowid order.
    static func dump(_ path: String) throws -> [[String?]] {
        let db = try SQLiteConnection(path: path, mode: .readOnly)
        var rows: [[String?]] = []
        for table in ["meta", "transactions"] {
            let select = try db.prepare("SELECT * FROM \(table) ORDER BY rowid")
            while try select.step() { rows.append([table] + (0..<select.columnCount).map { select.string(at: $0) }) }
        }
        return rows
    }

    @Test func restoreIsIdempotent() throws {
        let f = try Fixture()
        _ = try f.store.purchase(productID: "chamonix", account: f.account)
        let sub = try f.store.purchase(productID: "updates", account: f.account, period: .seconds(86_400))
        _ = try f.store.purchase(productID: "zermatt", account: "acct-someone-else")
        _ = try f.store.refund(transactionID: try f.ledger.verifier.verify(sub).transactionId)
        let first = try f.ledger.restore(from: f.store)
        #expect(first == LedgerImportSummary(inserted: 2))
        let rows = try Self.dump(f.ledger.path)
        let second = try f.ledger.restore(from: f.store)
        #expect(second == LedgerImportSummary(unchanged: 2))
        #expect(try Self.dump(f.ledger.path) == rows)
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0) == ["chamonix"])
        // Restore repairs a damaged row.
        try f.sql("UPDATE transactions SET jws = 'x.y.z' WHERE product_id = 'chamonix'")
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0).isEmpty)
        #expect(try f.ledger.restore(from: f.store) == LedgerImportSummary(replaced: 1, unchanged: 1))
        #expect(try Self.dump(f.ledger.path) == rows)
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0) == ["chamonix"])
    }

    // MARK: Tampering

    @Test func tamperedRowsAreRejectedAndReported() throws {
        let f = try Fixture()
        let payload = try f.buy("chamonix")
        let id = payload.transactionId
        let rows = try Self.dump(f.ledger.path)
        let jws = rows.last?.last.flatMap { $0 } ?? ""
        let parts = jws.split(separator: ".").map(String.init)

        func reasons(after edit: String) throws -> [RejectedLedgerRow.Reason] {
            try f.sql(edit)
            let report = try f.ledger.report(account: f.account, now: Self.t0)
            #expect(report.entitlements.isEmpty, "\(edit) granted \(report.entitlements)")
            #expect(report.problems.allSatisfy { !$0.contains("\n") })
            try f.sql("UPDATE transactions SET jws = '\(jws)', product_id = 'chamonix', account = '\(f.account)', expires_date = NULL")
            #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0) == ["chamonix"])
            return report.rejected.map(\.reason)
        }
        // Payload edited (another product), signature kept.
        var edited = payload
        edited.productId = "zermatt"
        let editedPayload = Base64URL.encode(Array(try JSONOutput.string(edited).utf8))
        #expect(try reasons(after: "UPDATE transactions SET product_id = 'zermatt', jws = '\(parts[0]).\(editedPayload).\(parts[2])'") == [.badSignature])
        // Signature bit flipped.
        var signature = try Base64URL.decode(parts[2])
        signature[5] ^= 0x10
        #expect(try reasons(after: "UPDATE transactions SET jws = '\(parts[0]).\(parts[1]).\(Base64URL.encode(signature))'") == [.badSignature])
        // Account column changed to someone else's (the signed account is ours), and a blob for another account.
        #expect(try reasons(after: "UPDATE transactions SET account = 'acct-other'") == [.columnMismatch])
        // Signed by another key: a second simulator with its own key.
        let rogue = try StoreSimulator(directory: f.dir.file("rogue"), clock: FixedRegionClock(Self.t0))
        let rogueJWS = try rogue.purchase(productID: "zermatt", account: f.account).jws
        #expect(try reasons(after: "UPDATE transactions SET jws = '\(rogueJWS)'") == [.unknownKey])
        // alg none with the original payload.
        let none = Base64URL.encode(Array(#"{"alg":"none","kid":"\#(f.store.publicKey.keyID)"}"#.utf8))
        #expect(try reasons(after: "UPDATE transactions SET jws = '\(none).\(parts[1]).\(parts[2])'") == [.badAlgorithm])
        // Another account's genuine transaction put in our row (its columns then disagree with it).
        let theirs = try f.store.purchase(productID: "zermatt", account: "acct-other").jws
        #expect(try reasons(after: "UPDATE transactions SET jws = '\(theirs)', product_id = 'zermatt'") == [.columnMismatch])
        #expect(!id.isEmpty)
    }

    @Test func noSQLUpdateOfAnyColumnGrantsAnything() throws {
        // A ledger whose account owns nothing now: a refund, an expired subscription, another account's purchase.
        let f = try Fixture()
        let refunded = try f.buy("chamonix")
        try f.ledger.import(signed: try f.store.refund(transactionID: refunded.transactionId))
        _ = try f.buy("updates", period: .seconds(86_400))
        try f.ledger.import(signed: try f.store.purchase(productID: "zermatt", account: "acct-other"))
        let now = Self.t0 + 2 * Self.day
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: now).isEmpty)
        let original = try Self.dump(f.ledger.path)
        let values = ["NULL", "0", "-1", "9223372036854775807", "253402300799999", "''", "'chamonix'", "'zermatt'", "'updates'",
                      "'\(f.account)'", "'acct-other'", "'LocalSimulator'", "x'00'", "1.5"]
        let columns = ["transaction_id", "original_transaction_id", "product_id", "account", "purchase_date",
                       "expires_date", "revocation_date", "signed_date", "jws"]
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
                try? copy.execute("UPDATE meta SET value = \(value) WHERE key = 'watermark_ms'")
                try? copy.execute("UPDATE meta SET value = \(value) WHERE key = 'account'")
                // A ledger that refuses to open (a garbled schema version) grants nothing either.
                let edited = try? EntitlementLedger(path: ledgerCopy, publicKeys: [f.store.publicKey], account: f.account)
                let granted = (try? edited?.entitledProductIDs(account: f.account, now: now)) ?? []
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
                    try? db.execute("UPDATE transactions SET \(column) = (SELECT \(column) FROM transactions WHERE rowid = \(nth(source))) WHERE rowid = \(nth(target))")
                    #expect(try f.ledger.entitledProductIDs(account: f.account, now: now).isEmpty, "copying \(column) from row \(source) to \(target)")
                    tried += 1
                }
            }
        }
        // The signed date watermark lowered by hand: the verified rows still hold it up.
        try db.execute("UPDATE meta SET value = '0' WHERE key = 'watermark_ms'")
        #expect(try f.ledger.report(account: f.account, now: Self.t0 - Self.day).clockRolledBack)
        #expect(tried == columns.count * values.count + columns.count * 6)
        #expect(original.count == 6)
    }

    // MARK: Clock

    @Test func clockRollbackExpiresSubscriptions() throws {
        let f = try Fixture()
        _ = try f.buy("chamonix")
        _ = try f.buy("updates", period: .seconds(365 * 86_400))
        let honest = try f.ledger.report(account: f.account, now: Self.t0 + Self.day)
        #expect(honest.entitlements.map(\.productID) == ["chamonix", "updates"] && !honest.clockRolledBack)
        // Set back before the purchase: inside the subscription's dates, but before what the store signed.
        let rolled = try f.ledger.report(account: f.account, now: Self.t0 - Self.day)
        #expect(rolled.clockRolledBack)
        #expect(rolled.entitlements.map(\.productID) == ["chamonix"])
        #expect(rolled.problems.first?.hasPrefix("clock rolled back") == true)
        #expect(rolled.watermark == Int64(Self.t0 * 1000))
        // A later refund raises the watermark even for a clock set back only to before it.
        let refundStore = try StoreSimulator(directory: f.dir.file("simulator"), clock: FixedRegionClock(Self.t0 + 10 * Self.day))
        let other = try refundStore.purchase(productID: "zermatt", account: f.account)
        try f.ledger.import(signed: try refundStore.refund(transactionID: try f.ledger.verifier.verify(other).transactionId))
        #expect(try f.ledger.report(account: f.account, now: Self.t0 + 5 * Self.day).clockRolledBack)
        // The ledger's own clock is used by default.
        let reopened = try EntitlementLedger(path: f.ledger.path, publicKeys: [f.store.publicKey],
                                             clock: FixedRegionClock(Self.t0 + 11 * Self.day))
        #expect(reopened.account == f.account)
        #expect(reopened.entitledProductIDs() == ["chamonix", "updates"])
    }

    // MARK: Concurrency and interruption

    @Test func eightConcurrentPurchasersLoseAndDuplicateNothing() throws {
        let f = try Fixture()
        let perThread = 5
        let failures = Failures()
        let done = DispatchGroup()
        // Threads, each with its own simulator and ledger connection (as separate processes would have).
        for t in 0..<8 {
            done.enter()
            let simulatorDir = f.dir.file("simulator"), ledgerPath = f.ledger.path
            let keys = [f.store.publicKey], account = f.account
            let thread = Thread {
                defer { done.leave() }
                do {
                    let store = try StoreSimulator(directory: simulatorDir, clock: FixedRegionClock(Self.t0))
                    let ledger = try EntitlementLedger(path: ledgerPath, publicKeys: keys, account: account, clock: FixedRegionClock(Self.t0))
                    for i in 0..<perThread {
                        let signed = try store.purchase(productID: "region-\(t)-\(i)", account: account)
                        try ledger.import(signed: signed)
                        // A second import (a retry) must not count twice.
                        try ledger.import(signed: signed)
                    }
                    _ = try ledger.restore(from: store)
                } catch {
                    failures.add("\(error)")
                }
            }
            thread.start()
        }
        done.wait()
        #expect(failures.all == [])
        let entitled = try f.ledger.entitlements(account: f.account, now: Self.t0)
        #expect(entitled.count == 8 * perThread)
        #expect(Set(entitled.map(\.productID)) == Set((0..<8).flatMap { t in (0..<perThread).map { "region-\(t)-\($0)" } }))
        #expect(Set(entitled.map(\.transactionID)).count == 8 * perThread)
        #expect(try f.store.transactions(account: f.account).count == 8 * perThread)
        let rows = try Self.dump(f.ledger.path).filter { $0.first == "transactions" }
        #expect(rows.count == 8 * perThread)
    }

    @Test func sharedInstancesAreSafeAcrossThreads() throws {
        let f = try Fixture()
        let done = DispatchGroup()
        let failures = Failures()
        for t in 0..<8 {
            done.enter()
            let store = f.store, ledger = f.ledger, account = f.account
            Thread {
                defer { done.leave() }
                do {
                    try ledger.import(signed: try store.purchase(productID: "p\(t)", account: account))
                    _ = try ledger.entitledProductIDs(account: account, now: Self.t0)
                } catch {
                    failures.add("\(error)")
                }
            }.start()
        }
        done.wait()
        #expect(failures.all == [])
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0).count == 8)
    }

    /// A writer that dies mid-purchase (its connection dropped inside an open write
    /// transaction, which is what SQLite sees when a process is killed) leaves the ledger as
    /// it was. In-process: the CLI-level kill test (SIGKILL to `tilepack store buy`) comes with the CLI.
    @Test func interruptedWriteLeavesTheLedgerConsistent() throws {
        let f = try Fixture()
        _ = try f.buy("chamonix")
        let before = try Self.dump(f.ledger.path)
        let signed = try f.store.purchase(productID: "zermatt", account: f.account)
        let payload = try f.ledger.verifier.verify(signed)
        do {
            let writer = try SQLiteConnection(path: f.ledger.path, mode: .readWriteCreate)
            try writer.execute("BEGIN IMMEDIATE")
            try writer.execute("""
                INSERT INTO transactions VALUES ('\(payload.transactionId)', '\(payload.transactionId)', 'zermatt',
                    '\(f.account)', \(payload.purchaseDate), NULL, NULL, \(payload.signedDate), '\(signed.jws)')
                """)
            // Half done: the watermark is not written yet. The connection goes without COMMIT.
            #expect(writer.isInTransaction)
        }
        // Another process (here: another connection) sees the state before the purchase, and can write.
        let reopened = try EntitlementLedger(path: f.ledger.path, publicKeys: [f.store.publicKey], clock: FixedRegionClock(Self.t0))
        #expect(try Self.dump(f.ledger.path) == before)
        let report = try reopened.report(account: f.account, now: Self.t0)
        #expect(report.entitlements.map(\.productID) == ["chamonix"] && report.rejected.isEmpty)
        let integrity = try SQLiteConnection(path: f.ledger.path, mode: .readOnly).prepare("PRAGMA integrity_check")
        #expect(try integrity.step() && integrity.string(at: 0) == "ok")
        // The purchase is still at the store: a restore completes it.
        #expect(try reopened.restore(from: f.store) == LedgerImportSummary(inserted: 1, unchanged: 1))
        #expect(try reopened.entitledProductIDs(account: f.account, now: Self.t0) == ["chamonix", "zermatt"])
    }

    @Test func cachedReadsSeeOtherConnectionsWrites() throws {
        let f = try Fixture()
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0).isEmpty)
        let other = try EntitlementLedger(path: f.ledger.path, publicKeys: [f.store.publicKey], clock: FixedRegionClock(Self.t0))
        try other.import(signed: try f.store.purchase(productID: "chamonix", account: f.account))
        #expect(try f.ledger.entitledProductIDs(account: f.account, now: Self.t0) == ["chamonix"])
        // Timing of the cached path (reported, not asserted: the machine is shared).
        let clock = ContinuousClock()
        let n = 2000
        let elapsed = try clock.measure {
            for _ in 0..<n { _ = try f.ledger.entitledProductIDs(account: f.account, now: Self.t0) }
        }
        print("ledger: cached entitledProductIDs \(elapsed.inSeconds / Double(n) * 1e6) µs per call")
    }
}
