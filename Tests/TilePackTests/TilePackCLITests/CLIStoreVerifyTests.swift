import Crypto
import Foundation
import Testing
@testable import TilePackCLI
@testable import TilePackRegions
import TilePackTools
import TilePackTestSupport

/// `tilepack store trust` and `tilepack store verify`: options parsed in-process, behaviour
/// (files written, exit statuses, stdout JSON, the one stderr line) through the built binary.
@Suite struct CLIStoreVerifyTests {
    typealias Run = TilepackBinary.Run

    /// Runs the built `tilepack` with `arguments`; `environment` entries are added to ours.
    static func tilepack(_ arguments: [String], environment: [String: String] = [:]) throws -> Run {
        try TilepackBinary.tilepack(arguments, environment: environment)
    }

    static func json(_ text: String) throws -> [String: Any] { try TilepackBinary.json(text) }

    // MARK: - Parsing

    @Test func verifyOptionsParse() throws {
        let verify = try #require(
            try TilePackCommand.parseAsRoot([
                "store", "verify", "tok.jws", "--trust", "t.json", "--kind", "renewal-info", "--json",
            ])
                as? StoreVerifyCommand)
        #expect(verify.tokenFile == "tok.jws")
        #expect(verify.trust == "t.json")
        #expect(verify.kind == .renewalInfo)
        #expect(verify.json)
        let plain = try #require(
            try TilePackCommand.parseAsRoot(["store", "verify", "tok.jws"]) as? StoreVerifyCommand)
        #expect(plain.kind == .transaction)
        #expect(plain.trust == nil)
        #expect(throws: (any Error).self) {
            try TilePackCommand.parseAsRoot(["store", "verify", "tok.jws", "--kind", "receipt"])
        }
    }

    @Test func trustOptionsParse() throws {
        let trust = try #require(
            try TilePackCommand.parseAsRoot([
                "store", "trust", "--simulator", "sim", "--publisher", "p.jwk",
                "--bundle-id", "com.example", "-o", "trust.json", "--force",
            ])
                as? StoreTrustCommand)
        #expect(trust.simulator == "sim")
        #expect(trust.publisher == ["p.jwk"])
        #expect(trust.bundleId == "com.example")
        #expect(trust.output == "trust.json")
        #expect(trust.force)
        #expect(throws: (any Error).self) {
            try TilePackCommand.parseAsRoot(["store", "trust", "--simulator", "sim", "--bundle-id", "com example"])
        }
        #expect(throws: (any Error).self) {
            try TilePackCommand.parseAsRoot(["store", "trust", "--bundle-id", "com.example"])
        }
    }

    // MARK: - Behaviour

    static let bundle = "com.tilepack.test"

    /// A test App Store, a publisher key and a trust file written by `store trust`.
    struct Setup {
        let dir = TemporaryDirectory()
        let ca: TestAppStoreCA
        let trust: String

        init() throws {
            ca = try TestAppStoreCA(directory: dir.path + "/sim")
            let key = JWK(publicKey: Curve25519PublicKeyFixture.key)
            _ = try dir.write("publisher.jwk", Array(try key.jsonString().utf8))
            trust = dir.file("trust.json")
            let run = try CLIStoreVerifyTests.tilepack([
                "store", "trust", "--simulator", dir.path + "/sim", "--publisher", dir.file("publisher.jwk"),
                "--bundle-id", CLIStoreVerifyTests.bundle, "-o", trust,
            ])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(
                run.stdout.hasPrefix("wrote \(trust): Sandbox, bundle \(CLIStoreVerifyTests.bundle)"), "\(run.stdout)")
        }

        func token(_ name: String, _ payload: some Encodable) throws -> String {
            try dir.write(name, Array((try ca.sign(payload) + "\n").utf8))
        }
    }

    static func transaction(expires: Date? = nil, revoked: Date? = nil) -> AppStoreTransaction {
        AppStoreTransaction(
            transactionId: "2000000042", originalTransactionId: "2000000042", bundleId: bundle,
            productId: "com.tilepack.region.chamonix", purchaseDate: Date(appStoreMilliseconds: 1_763_000_000_000),
            expiresDate: expires, type: expires == nil ? .nonConsumable : .autoRenewable,
            signedDate: Date(appStoreMilliseconds: 1_763_000_000_100), revocationReason: revoked.map { _ in 0 },
            revocationDate: revoked,
            environment: .sandbox)
    }

    @Test func trustWritesASandboxTrustFile() throws {
        let setup = try Setup()
        let anchors = try TrustAnchors(contentsOf: setup.trust)
        #expect(anchors.appStoreRoots == [setup.ca.rootCertificateDER])
        #expect(anchors.environments == [.sandbox])
        #expect(anchors.bundleID == Self.bundle)
        #expect(anchors.publisherKeys.map(\.x) == [JWK(publicKey: Curve25519PublicKeyFixture.key).x])
        #expect(anchors.xcodeRoots.isEmpty && anchors.appAppleID == nil)

        // Refuses to overwrite without --force.
        let args = [
            "store", "trust", "--simulator", setup.dir.path + "/sim", "--bundle-id", "com.other", "-o", setup.trust,
        ]
        let again = try Self.tilepack(args)
        #expect(again.status == 64)
        #expect(again.stderr == "error: \(setup.trust): exists; pass --force to replace it\n")
        #expect(try TrustAnchors(contentsOf: setup.trust).bundleID == Self.bundle)
        let forced = try Self.tilepack(args + ["--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
        #expect(try TrustAnchors(contentsOf: setup.trust).bundleID == "com.other")

        // No test App Store there yet: it is created (its CA, its published root), and the
        // trust file pins exactly that root.
        let fresh = try Self.tilepack([
            "store", "trust", "--simulator", setup.dir.path + "/fresh", "--bundle-id", "a.b", "-o",
            setup.dir.file("t2.json"),
        ])
        #expect(fresh.status == 0, "\(fresh.stderr)")
        let published = try #require(FileManager.default.contents(atPath: setup.dir.path + "/fresh/AppStoreRoot.der"))
        #expect(try TrustAnchors(contentsOf: setup.dir.file("t2.json")).appStoreRoots == [[UInt8](published)])
        // A simulator path that cannot be a directory: an error naming it, no trust file.
        _ = try setup.dir.write("plainfile", [1])
        let blocked = try Self.tilepack([
            "store", "trust", "--simulator", setup.dir.file("plainfile"), "--bundle-id", "a.b", "-o",
            setup.dir.file("t3.json"),
        ])
        #expect(
            blocked.status != 0 && blocked.stderr.hasPrefix("error: \(setup.dir.file("plainfile"))"),
            "\(blocked.stderr)")
        #expect(!FileManager.default.fileExists(atPath: setup.dir.file("t3.json")))

        // A private publisher key is refused.
        let secret = JWK(privateKey: Curve25519PrivateKeyFixture.key)
        let secretPath = try setup.dir.write("secret.jwk", Array(try secret.jsonString().utf8))
        let leaked = try Self.tilepack([
            "store", "trust", "--simulator", setup.dir.path + "/sim", "--publisher", secretPath,
            "--bundle-id", "a.b", "-o", setup.dir.file("t3.json"),
        ])
        #expect(leaked.status == 2)
        #expect(leaked.stderr.contains("holds a private key"), "\(leaked.stderr)")
    }

    @Test func verifyValidTokens() throws {
        let setup = try Setup()
        let transaction = try setup.token("tx.jws", Self.transaction())
        let run = try Self.tilepack(["store", "verify", transaction, "--trust", setup.trust, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.isEmpty)
        let object = try Self.json(run.stdout)
        #expect(object["valid"] as? Bool == true)
        #expect(object["kind"] as? String == "transaction")
        #expect(object["environment"] as? String == "Sandbox")
        let payload = try #require(object["payload"] as? [String: Any])
        #expect(payload["transactionId"] as? String == "2000000042")
        #expect(payload["type"] as? String == "Non-Consumable")
        #expect(payload["expiresDate"] == nil)

        let plain = try Self.tilepack(["store", "verify", transaction, "--trust", setup.trust])
        #expect(plain.status == 0)
        #expect(
            plain.stdout == "valid: transaction 2000000042, product com.tilepack.region.chamonix, environment Sandbox\n"
        )

        let renewal = try setup.token(
            "renewal.jws",
            AppStoreRenewalInfo(
                originalTransactionId: "7", autoRenewProductId: "com.tilepack.updates",
                signedDate: Date(appStoreMilliseconds: 1_763_000_000_000), environment: .sandbox))
        let r = try Self.tilepack([
            "store", "verify", renewal, "--trust", setup.trust, "--kind", "renewal-info", "--json",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try Self.json(r.stdout)["kind"] as? String == "renewal-info")

        let notification = try setup.token(
            "note.jws",
            AppStoreNotification(
                notificationType: "TEST", data: .init(bundleId: Self.bundle, environment: .sandbox),
                signedDate: Date(appStoreMilliseconds: 1_763_000_000_000)))
        let n = try Self.tilepack(["store", "verify", notification, "--trust", setup.trust, "--kind", "notification"])
        #expect(n.status == 0, "\(n.stderr)")
        #expect(n.stdout == "valid: notification TEST, environment Sandbox\n")
    }

    @Test func verifyRefusals() throws {
        let setup = try Setup()
        let good = try setup.ca.sign(Self.transaction())
        var parts = good.split(separator: ".").map(String.init)
        parts[2] =
            String(parts[2].prefix(10)) + (parts[2].dropFirst(10).first == "A" ? "B" : "A")
            + String(parts[2].dropFirst(11))
        let tampered = try setup.dir.write("tampered.jws", Array(parts.joined(separator: ".").utf8))
        let run = try Self.tilepack(["store", "verify", tampered, "--trust", setup.trust])
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty)
        #expect(
            run.stderr
                == """
                error: \(tampered): signature: the ES256 signature does not verify with the leaf certificate's \
                key\n
                """
        )
        let json = try Self.tilepack(["store", "verify", tampered, "--trust", setup.trust, "--json"])
        #expect(json.status == 2)
        let object = try Self.json(json.stdout)
        #expect(object["valid"] as? Bool == false)
        #expect(object["reason"] as? String == "signature")
        #expect(object["detail"] as? String == "the ES256 signature does not verify with the leaf certificate's key")

        let cases: [(String, AppStoreTransaction, String)] = [
            ("revoked.jws", Self.transaction(revoked: Date(appStoreMilliseconds: 1_763_000_000_050)), "revoked"),
            ("expired.jws", Self.transaction(expires: Date(appStoreMilliseconds: 1_763_000_001_000)), "expired"),
            (
                "bundle.jws",
                {
                    var t = Self.transaction(); t.bundleId = "com.other"; return t
                }(), "bundle"
            ),
            (
                "environment.jws",
                {
                    var t = Self.transaction(); t.environment = .production; return t
                }(), "environment"
            ),
        ]
        for (name, payload, reason) in cases {
            let file = try setup.token(name, payload)
            let r = try Self.tilepack(["store", "verify", file, "--trust", setup.trust, "--json"])
            #expect(r.status == 2, "\(name)")
            #expect(
                r.stderr.hasPrefix("error: \(file): \(reason): ") && r.stderr.filter { $0 == "\n" }.count == 1,
                "\(r.stderr)")
            #expect(try Self.json(r.stdout)["reason"] as? String == reason)
        }

        // A token of another test App Store: not chained to the pinned root.
        let other = try TestAppStoreCA(directory: setup.dir.path + "/other")
        let foreign = try setup.dir.write("foreign.jws", Array(try other.sign(Self.transaction()).utf8))
        let f = try Self.tilepack(["store", "verify", foreign, "--trust", setup.trust])
        #expect(f.status == 2)
        #expect(f.stderr.hasPrefix("error: \(foreign): chain: "), "\(f.stderr)")

        // A missing trust file is an error about it, not a verdict.
        let missing = try Self.tilepack(["store", "verify", foreign, "--trust", setup.dir.file("none.json"), "--json"])
        #expect(missing.status == 2)
        #expect(missing.stdout.isEmpty)
        #expect(missing.stderr.hasPrefix("error: \(setup.dir.file("none.json")): cannot open"), "\(missing.stderr)")
    }

    /// `--trust` defaults to $XDG_CONFIG_HOME/tilepack/trust.json; Apple's own vector verifies
    /// with a trust file that pins Apple's test root by a relative path.
    @Test func verifyWithDefaultTrustAndApplesVector() throws {
        let dir = TemporaryDirectory()
        let config = dir.path + "/config/tilepack"
        try FileManager.default.createDirectory(atPath: config, withIntermediateDirectories: true)
        _ = try dir.write("config/tilepack/testCA.der", try TestData.appStoreVector("certs/testCA.der"))
        _ = try dir.write(
            "config/tilepack/trust.json",
            Array(#"{"bundle_id":"com.example","environments":["Sandbox"],"app_store_roots":["testCA.der"]}"#.utf8))
        let token = TestData.appStoreVectors + "/mock_signed_data/transactionInfo"
        let run = try Self.tilepack(
            ["store", "verify", token, "--json"], environment: ["XDG_CONFIG_HOME": dir.path + "/config"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try Self.json(run.stdout)["environment"] as? String == "Sandbox")
        let renewal = try Self.tilepack(
            [
                "store", "verify", TestData.appStoreVectors + "/mock_signed_data/renewalInfo", "--kind",
                "renewal-info",
            ],
            environment: ["XDG_CONFIG_HOME": dir.path + "/config"])
        #expect(renewal.status == 0, "\(renewal.stderr)")
        let legacy = try Self.tilepack(
            ["store", "verify", TestData.appStoreVectors + "/mock_signed_data/legacyTransaction"],
            environment: ["XDG_CONFIG_HOME": dir.path + "/config"])
        #expect(legacy.status == 2)
        #expect(legacy.stderr.contains(": malformed: "), "\(legacy.stderr)")
    }
}

/// Fixed Ed25519 keys for publisher JWKs.
enum Curve25519PublicKeyFixture {
    static var key: Curve25519.Signing.PublicKey { Curve25519PrivateKeyFixture.key.publicKey }
}

enum Curve25519PrivateKeyFixture {
    static var key: Curve25519.Signing.PrivateKey {
        try! Curve25519.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 3, count: 32))
    }
}
