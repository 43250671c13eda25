import Foundation
import Testing
@testable import TilePackCore
@testable import TilePackRegions
import TilePackTools
import TilePackTestSupport

/// App Store signed data: Apple's own vectors give Apple's verdicts (table-driven, one row per
/// row of the README in ../shared/testdata/appstore), tokens of the test App Store round-trip
/// and fail as they must when altered, and trust files are read strictly.
@Suite(.tags(.concurrent)) struct AppStoreVerifierTests {
    /// The verification error `body` throws, nil when it throws nothing; any other error is an issue.
    static func failure(_ body: () throws -> Void) -> AppStoreVerificationError? {
        do {
            try body()
            return nil
        } catch let error as AppStoreVerificationError {
            return error
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    static func reason(_ body: () throws -> Void) -> AppStoreVerificationError.Reason? { failure(body)?.code }

    // MARK: - Apple's vectors

    /// Apple's App Store Server Library vectors (TestData.appStoreVectors).
    static let vectors = TestData.appStoreVectors

    static func bytes(_ relative: String) throws -> [UInt8] { try TestData.appStoreVector(relative) }

    static func token(_ relative: String) throws -> String {
        String(decoding: try bytes(relative), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    enum Kind: String, CustomStringConvertible {
        case transaction, renewalInfo, notification
        var description: String { rawValue }
    }

    /// One verification: the token (a file of the vectors, or literal text), how it is
    /// verified, with which anchors, and Apple's verdict (nil: valid).
    struct VectorCase: CustomTestStringConvertible, Sendable {
        var token: String
        var isFile = true
        var kind: Kind
        var environments: Set<AppStoreEnvironment>
        var bundle: String
        var appAppleID: Int64? = nil
        /// Pins the Xcode certificate of the Xcode vectors.
        var xcodeRoot = false
        var expected: AppStoreVerificationError.Reason?
        var testDescription: String {
            let envs = AppStoreEnvironment.allCases.filter(environments.contains).map(\.rawValue).joined(separator: "+")
            return
                """
                \(token) as \(kind) [\(envs), \
                \(bundle)\(appAppleID.map { ", \($0)" } ?? "")\(xcodeRoot ? ", Xcode root" : "")] → \
                \(expected?.rawValue ?? "valid")
                """
        }
    }

    static let xcodeBundle = "com.example.naturelab.backyardbirds.example"

    static let vectorCases: [VectorCase] = {
        var rows: [VectorCase] = [
            .init(
                token: "mock_signed_data/transactionInfo", kind: .transaction, environments: [.sandbox],
                bundle: "com.example", expected: nil),
            .init(
                token: "mock_signed_data/transactionInfo", kind: .transaction, environments: [.sandbox],
                bundle: "com.example.x", expected: .bundle),
            .init(
                token: "mock_signed_data/renewalInfo", kind: .renewalInfo, environments: [.sandbox],
                bundle: "com.example", expected: nil),
            .init(
                token: "mock_signed_data/testNotification", kind: .notification, environments: [.sandbox],
                bundle: "com.example", expected: nil),
            .init(
                token: "mock_signed_data/testNotification", kind: .notification, environments: [.production],
                bundle: "com.example", appAppleID: 1234, expected: .environment),
            .init(
                token: "mock_signed_data/testNotification", kind: .notification, environments: [.production],
                bundle: "com.example", expected: .environment),
            .init(
                token: "mock_signed_data/testNotification", kind: .notification, environments: [.production],
                bundle: "com.example", appAppleID: 1235, expected: .appID),
            .init(
                token: "mock_signed_data/testNotification", kind: .notification, environments: [.sandbox],
                bundle: "com.example", appAppleID: 1235, expected: .appID),
            .init(
                token: "mock_signed_data/wrongBundleId", kind: .notification, environments: [.sandbox],
                bundle: "com.examplex", expected: .bundle),
            .init(
                token: "mock_signed_data/missingX5CHeaderClaim", kind: .notification, environments: [.sandbox],
                bundle: "com.example", expected: .malformed),
        ]
        for kind in [Kind.transaction, .renewalInfo, .notification] {
            rows.append(
                .init(
                    token: "a.b.c.d", isFile: false, kind: kind, environments: [.sandbox], bundle: "com.example",
                    expected: .malformed))
            rows.append(
                .init(
                    token: "a.b.c", isFile: false, kind: kind, environments: [.sandbox], bundle: "com.example",
                    expected: .malformed))
            rows.append(
                .init(
                    token: "mock_signed_data/legacyTransaction", kind: kind, environments: [.sandbox],
                    bundle: "com.example", expected: .malformed))
        }
        // Xcode tokens: refused by a Production or Sandbox device before their signature is
        // looked at; with Xcode listed, refused unless their certificate is pinned; accepted
        // (transaction, renewal info) only then. The app transaction is no transaction: its
        // originalPurchaseDate is year 1 (before 1970), so it stays malformed.
        let xcode: [(String, Kind)] = [
            ("xcode/xcode-signed-transaction", .transaction), ("xcode/xcode-signed-renewal-info", .renewalInfo),
            ("xcode/xcode-signed-app-transaction", .transaction),
        ]
        for (file, kind) in xcode {
            rows.append(
                .init(token: file, kind: kind, environments: [.sandbox], bundle: xcodeBundle, expected: .environment))
            rows.append(
                .init(
                    token: file, kind: kind, environments: [.production, .sandbox], bundle: xcodeBundle,
                    expected: .environment))
            rows.append(.init(token: file, kind: kind, environments: [.xcode], bundle: xcodeBundle, expected: .chain))
            rows.append(
                .init(
                    token: file, kind: kind, environments: [.sandbox], bundle: xcodeBundle, xcodeRoot: true,
                    expected: .environment))
            rows.append(
                .init(
                    token: file, kind: kind, environments: [.xcode], bundle: xcodeBundle, xcodeRoot: true,
                    expected: file.hasSuffix("app-transaction") ? .malformed : nil))
        }
        rows.append(
            .init(
                token: "xcode/xcode-signed-transaction", kind: .transaction, environments: [.xcode],
                bundle: "com.example",
                xcodeRoot: true, expected: .bundle))
        for receipt in ["xcode/xcode-app-receipt-empty", "xcode/xcode-app-receipt-with-transaction"] {
            rows.append(
                .init(
                    token: receipt, kind: .transaction, environments: [.xcode], bundle: xcodeBundle, xcodeRoot: true,
                    expected: .malformed))
        }
        return rows
    }()

    /// The self-signed "StoreKit Testing in Xcode" certificate the Xcode vectors carry.
    static func xcodeCertificate() throws -> [UInt8] {
        let header = try token("xcode/xcode-signed-transaction").split(separator: ".")[0]
        let json = try JSONSerialization.jsonObject(with: Data(Base64URL.decode(header))) as? [String: Any]
        let x5c = try #require(json?["x5c"] as? [String])
        return Array(try #require(Data(base64Encoded: x5c[0])))
    }

    @Test(arguments: vectorCases)
    func appleVector(_ row: VectorCase) throws {
        let anchors = TrustAnchors(
            appStoreRoots: [try Self.bytes("certs/testCA.der")],
            xcodeRoots: row.xcodeRoot ? [try Self.xcodeCertificate()] : [],
            bundleID: row.bundle, environments: row.environments, appAppleID: row.appAppleID)
        let verifier = AppStoreVerifier(anchors: anchors)
        let text = row.isFile ? try Self.token(row.token) : row.token
        let outcome: Result<AppStoreEnvironment?, AppStoreVerificationError>
        do {
            switch row.kind {
            case .transaction: outcome = .success(try verifier.verifyTransaction(text, source: row.token).environment)
            case .renewalInfo: outcome = .success(try verifier.verifyRenewalInfo(text, source: row.token).environment)
            case .notification:
                outcome = .success(try verifier.verifyNotification(text, source: row.token).appIdentity.environment)
            }
        } catch let error as AppStoreVerificationError {
            outcome = .failure(error)
        }
        switch (outcome, row.expected) {
        case (.success(let environment), nil):
            #expect(environment.map { row.environments.contains($0) } == true)
        case (.failure(let error), let expected?):
            #expect(error.code == expected, "\(error)")
            #expect(error.description.hasPrefix("\(row.token): \(expected.rawValue): "))
            #expect(!error.description.contains("\n"))
        case (.success, let expected?):
            Issue.record("accepted; Apple's verdict is \(expected.rawValue)")
        case (.failure(let error), nil):
            Issue.record("rejected (\(error)); Apple's verdict is valid")
        }
    }

    @Test func appleVectorPayloads() throws {
        let anchors = TrustAnchors(
            appStoreRoots: [try Self.bytes("certs/testCA.der")], bundleID: "com.example", environments: [.sandbox])
        let verifier = AppStoreVerifier(anchors: anchors)
        let transaction = try verifier.verifyTransaction(
            try Self.token("mock_signed_data/transactionInfo"), source: "transactionInfo")
        #expect(
            transaction
                == AppStoreTransaction(
                    bundleId: "com.example", signedDate: Date(appStoreMilliseconds: 1_672_956_154_000),
                    environment: .sandbox))
        let renewal = try verifier.verifyRenewalInfo(
            try Self.token("mock_signed_data/renewalInfo"), source: "renewalInfo")
        #expect(
            renewal
                == AppStoreRenewalInfo(signedDate: Date(appStoreMilliseconds: 1_672_956_154_000), environment: .sandbox)
        )
        let notification = try verifier.verifyNotification(
            try Self.token("mock_signed_data/testNotification"), source: "testNotification")
        #expect(notification.notificationType == "TEST")
        #expect(notification.notificationUUID == "9ad56bd2-0bc6-42e0-af24-fd996d87a1e6")
        #expect(notification.data?.appAppleId == 1234)
        #expect(notification.data?.bundleId == "com.example")
        #expect(notification.signedDate?.appStoreMilliseconds == 1_681_314_324_000)
        // transactionInfo's x5c[2] is not the pinned root, byte for byte: the pinned one decides.
        let header = try #require(try Self.token("mock_signed_data/transactionInfo").split(separator: ".").first)
        let json = try JSONSerialization.jsonObject(with: Data(Base64URL.decode(header))) as? [String: Any]
        let x5c = try #require(json?["x5c"] as? [String])
        #expect(Array(Data(base64Encoded: x5c[2])!) != (try Self.bytes("certs/testCA.der")))
    }

    /// Xcode's fractional dates are truncated to the millisecond.
    @Test func xcodeVectorPayloadWhenAllowed() throws {
        let anchors = TrustAnchors(
            appStoreRoots: [], xcodeRoots: [try Self.xcodeCertificate()], bundleID: Self.xcodeBundle,
            environments: [.xcode])
        let verifier = AppStoreVerifier(anchors: anchors)
        let transaction = try verifier.verifyTransaction(
            try Self.token("xcode/xcode-signed-transaction"), source: "xcode")
        #expect(transaction.purchaseDate?.appStoreMilliseconds == 1_697_679_936_049)
        #expect(transaction.signedDate?.appStoreMilliseconds == 1_697_679_936_056)
        #expect(transaction.expiresDate?.appStoreMilliseconds == 1_700_358_336_049)
        #expect(transaction.type == .autoRenewable)
        #expect(transaction.environment == .xcode)
        #expect(transaction.productId == "pass.premium")
        #expect(transaction.isUpgraded == false)
        let renewal = try verifier.verifyRenewalInfo(try Self.token("xcode/xcode-signed-renewal-info"), source: "xcode")
        #expect(renewal.renewalDate?.appStoreMilliseconds == 1_700_358_336_049)
        #expect(renewal.autoRenewStatus == 1)
    }

    /// Xcode listed, but another certificate pinned as the Xcode root: the chain fails.
    @Test func xcodeTokenWithAnotherPinnedCertificate() throws {
        let anchors = TrustAnchors(
            appStoreRoots: [], xcodeRoots: [try Self.bytes("certs/testCA.der")],
            bundleID: Self.xcodeBundle, environments: [.xcode])
        let token = try Self.token("xcode/xcode-signed-transaction")
        let error = Self.failure {
            _ = try AppStoreVerifier(anchors: anchors).verifyTransaction(token, source: "xcode")
        }
        #expect(error?.code == .chain)
        #expect(error?.detail.contains("not a pinned Xcode certificate") == true, "\(String(describing: error))")
    }

    struct ChainCase: CustomTestStringConvertible, Sendable {
        var leaf: String
        var intermediate: String
        var root: String
        var at: Int64 = 1_761_962_975
        var valid: Bool
        var testDescription: String { "\(leaf) ← \(intermediate) ← \(root) at \(at): \(valid ? "valid" : "invalid")" }
    }

    static let chainCases: [ChainCase] = [
        .init(leaf: "test-leaf.der", intermediate: "test-intermediate.der", root: "test-root.der", valid: true),
        .init(
            leaf: "test-leaf-for-intermediate-invalid-oid.der", intermediate: "test-intermediate-invalid-oid.der",
            root: "test-root.der", valid: false),
        .init(
            leaf: "test-leaf-invalid-oid.der", intermediate: "test-intermediate.der", root: "test-root.der",
            valid: false),
        .init(
            leaf: "test-leaf.der", intermediate: "test-intermediate.der", root: "test-root.der", at: 2_280_946_846,
            valid: false),
        .init(leaf: "test-leaf.der", intermediate: "test-intermediate.der", root: "AppleRootCA-G3.der", valid: false),
        .init(
            leaf: "apple-signing-leaf.der", intermediate: "apple-wwdr-g6-intermediate.der", root: "AppleRootCA-G3.der",
            valid: true),
    ]

    @Test(arguments: chainCases)
    func appleChainVector(_ row: ChainCase) throws {
        let verifier = AppStoreVerifier(
            anchors: TrustAnchors(
                appStoreRoots: [try Self.bytes("chain/" + row.root)],
                bundleID: "com.example", environments: [.production]))
        let leaf = try Self.bytes("chain/" + row.leaf), intermediate = try Self.bytes("chain/" + row.intermediate)
        if let error = Self.failure({
            try verifier.verifyChain(
                leaf: leaf, intermediate: intermediate, at: Date(timeIntervalSince1970: TimeInterval(row.at)))
        }) {
            #expect(!row.valid, "rejected (\(error)); Apple's verdict is valid")
            #expect(error.code == .chain)
        } else {
            #expect(row.valid, "accepted; Apple's verdict is invalid")
        }
    }

    @Test func chainProblemsSayWhy() throws {
        func problem(_ leaf: String, _ intermediate: String, _ root: String, at: Int64 = 1_761_962_975) throws -> String
        {
            let verifier = AppStoreVerifier(
                anchors: TrustAnchors(
                    appStoreRoots: [try Self.bytes("chain/" + root)],
                    bundleID: "com.example", environments: [.production]))
            let leaf = try Self.bytes("chain/" + leaf), intermediate = try Self.bytes("chain/" + intermediate)
            return Self.failure({
                try verifier.verifyChain(
                    leaf: leaf, intermediate: intermediate, at: Date(timeIntervalSince1970: TimeInterval(at)))
            })?.detail
                ?? "valid"
        }
        #expect(
            try problem("test-leaf-invalid-oid.der", "test-intermediate.der", "test-root.der").contains(
                "1.2.840.113635.100.6.11.1"))
        #expect(
            try problem(
                "test-leaf-for-intermediate-invalid-oid.der", "test-intermediate-invalid-oid.der", "test-root.der"
            ).contains("1.2.840.113635.100.6.2.1"))
        #expect(
            try problem("test-leaf.der", "test-intermediate.der", "test-root.der", at: 2_280_946_846).contains(
                "expired"))
        #expect(try problem("test-leaf.der", "test-intermediate.der", "AppleRootCA-G3.der").contains("pinned"))
        #expect(
            try problem("apple-signing-leaf.der", "test-intermediate.der", "test-root.der").contains(
                "not issued by the intermediate"))
    }

    // MARK: - The test App Store's tokens

    static let bundle = "com.tilepack.test"

    static func sandboxVerifier(
        _ ca: TestAppStoreCA, bundle: String = bundle,
        environments: Set<AppStoreEnvironment> = [.sandbox]
    ) -> AppStoreVerifier {
        AppStoreVerifier(
            anchors: TrustAnchors(appStoreRoots: [ca.rootCertificateDER], bundleID: bundle, environments: environments))
    }

    static func transaction(environment: AppStoreEnvironment = .sandbox, bundle: String = bundle) -> AppStoreTransaction
    {
        AppStoreTransaction(
            transactionId: "2000000001", originalTransactionId: "2000000001", bundleId: bundle,
            productId: "com.tilepack.region.chamonix", purchaseDate: Date(appStoreMilliseconds: 1_763_000_000_000),
            originalPurchaseDate: Date(appStoreMilliseconds: 1_763_000_000_000),
            quantity: 1, type: .nonConsumable, appAccountToken: "6f0c5d1e-0b1a-4c55-9d7e-2f4a1f5c9b10",
            inAppOwnershipType: "PURCHASED",
            signedDate: Date(appStoreMilliseconds: 1_763_000_000_500), environment: environment, storefront: "FRA",
            storefrontId: "143442",
            transactionReason: "PURCHASE", currency: "EUR", price: 990)
    }

    /// Replaces the character at `offset` of part `part` (0 header, 1 payload, 2 signature)
    /// with another base64url character (same bits unused, so it still decodes).
    static func altered(_ token: String, part: Int, offset: Int) -> String {
        var parts = token.split(separator: ".", omittingEmptySubsequences: false).map { Array($0.utf8) }
        let c = parts[part][offset]
        parts[part][offset] = c == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        return parts.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ".")
    }

    @Test func testAppStoreRoundTrip() throws {
        let dir = TemporaryDirectory()
        let ca = try TestAppStoreCA(directory: dir.path + "/store")
        let verifier = Self.sandboxVerifier(ca)
        let transaction = Self.transaction()
        let jws = try ca.sign(transaction)
        #expect(try verifier.verifyTransaction(jws, source: "t") == transaction)

        let renewal = AppStoreRenewalInfo(
            originalTransactionId: "2000000002", autoRenewProductId: "com.tilepack.updates",
            productId: "com.tilepack.updates", autoRenewStatus: 1,
            signedDate: Date(appStoreMilliseconds: 1_763_000_000_000),
            environment: .sandbox, renewalDate: Date(appStoreMilliseconds: 1_794_536_000_000))
        #expect(try verifier.verifyRenewalInfo(try ca.sign(renewal), source: "r") == renewal)

        let notification = AppStoreNotification(
            notificationType: "REFUND", notificationUUID: "c0ffee00-0000-4000-8000-000000000001",
            data: .init(bundleId: Self.bundle, environment: .sandbox, signedTransactionInfo: jws), version: "2.0",
            signedDate: Date(appStoreMilliseconds: 1_763_000_001_000))
        let verified = try verifier.verifyNotification(try ca.sign(notification), source: "n")
        #expect(verified == notification)
        #expect(
            try verifier.verifyTransaction(try #require(verified.data?.signedTransactionInfo), source: "inner")
                == transaction)

        // The root is published, and a second open loads the same CA.
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: ca.rootCertificatePath))) == ca.rootCertificateDER)
        #expect(ca.rootCertificatePath == dir.path + "/store/AppStoreRoot.der")
        let again = try TestAppStoreCA(directory: dir.path + "/store")
        #expect(again.rootCertificateDER == ca.rootCertificateDER)
        #expect(try verifier.verifyTransaction(try again.sign(transaction), source: "t") == transaction)

        // The header is Apple's: ES256, JWT, three standard-base64 certificates.
        let header =
            try JSONSerialization.jsonObject(with: Data(Base64URL.decode(jws.split(separator: ".")[0])))
            as? [String: Any]
        #expect(header?["alg"] as? String == "ES256")
        #expect(header?["typ"] as? String == "JWT")
        #expect((header?["x5c"] as? [String])?.count == 3)
        // Keys are private files.
        var info = stat()
        #expect(stat(dir.path + "/store/TestAppStoreCA/leaf.key.pem", &info) == 0 && info.st_mode & 0o077 == 0)
    }

    @Test func oneChangedByteIsRejected() throws {
        let dir = TemporaryDirectory()
        let ca = try TestAppStoreCA(directory: dir.path)
        let verifier = Self.sandboxVerifier(ca)
        let jws = try ca.sign(Self.transaction())
        let parts = jws.split(separator: ".").map(\.count)
        for offset in [0, parts[1] / 3, parts[1] / 2, parts[1] - 8] {
            #expect(
                Self.reason {
                    _ = try verifier.verifyTransaction(Self.altered(jws, part: 1, offset: offset), source: "p")
                } == .signature)
        }
        for offset in [0, 20, 42, parts[2] - 8] {
            #expect(
                Self.reason {
                    _ = try verifier.verifyTransaction(Self.altered(jws, part: 2, offset: offset), source: "s")
                } == .signature)
        }
        // Signature of another token with this payload: still refused.
        let other = try ca.sign(Self.transaction(bundle: "com.other"))
        let spliced = jws.split(separator: ".")[0...1].joined(separator: ".") + "." + other.split(separator: ".")[2]
        #expect(
            throws: AppStoreVerificationError(
                .signature, source: "x", "the ES256 signature does not verify with the leaf certificate's key")
        ) {
            try verifier.verifyTransaction(spliced, source: "x")
        }
    }

    @Test func theTokensOwnRootIsIgnored() throws {
        let dir = TemporaryDirectory()
        let ca = try TestAppStoreCA(directory: dir.path + "/a")
        let intruder = try TestAppStoreCA(directory: dir.path + "/b")
        // x5c[2] replaced by another root: verifies against the pinned root only.
        let swapped = ca.signer.withCertificateChain([
            ca.leafCertificateDER, ca.intermediateCertificateDER, intruder.rootCertificateDER,
        ])
        let jws = try swapped.sign(Self.transaction())
        #expect(try Self.sandboxVerifier(ca).verifyTransaction(jws, source: "t") == Self.transaction())
        #expect(Self.reason { _ = try Self.sandboxVerifier(intruder).verifyTransaction(jws, source: "t") } == .chain)
        // Another CA's complete chain: refused by a device that pins this one.
        let foreign = try intruder.sign(Self.transaction())
        #expect(Self.reason { _ = try Self.sandboxVerifier(ca).verifyTransaction(foreign, source: "t") } == .chain)
        // The leaf presented as its own intermediate, or the root as the intermediate: no chain.
        for chain in [
            [ca.leafCertificateDER, ca.leafCertificateDER, ca.rootCertificateDER],
            [ca.leafCertificateDER, ca.rootCertificateDER, ca.rootCertificateDER],
        ] {
            let token = try ca.signer.withCertificateChain(chain).sign(Self.transaction())
            #expect(Self.reason { _ = try Self.sandboxVerifier(ca).verifyTransaction(token, source: "t") } == .chain)
        }
        // A device pinned to Apple's production root refuses the test App Store.
        let apple = AppStoreVerifier(
            anchors: TrustAnchors(
                appStoreRoots: [try Self.bytes("chain/AppleRootCA-G3.der")],
                bundleID: Self.bundle, environments: [.production, .sandbox], appAppleID: 1))
        let token = try ca.sign(Self.transaction())
        #expect(Self.reason { _ = try apple.verifyTransaction(token, source: "t") } == .chain)
    }

    @Test func bundleAndEnvironmentAreChecked() throws {
        let dir = TemporaryDirectory()
        let ca = try TestAppStoreCA(directory: dir.path)
        let verifier = Self.sandboxVerifier(ca)
        let reason = Self.reason
        #expect(
            reason {
                _ = try verifier.verifyTransaction(try! ca.sign(Self.transaction(bundle: "com.other")), source: "t")
            } == .bundle)
        #expect(
            reason {
                _ = try verifier.verifyTransaction(
                    try! ca.sign(Self.transaction(environment: .production)), source: "t")
            } == .environment)
        // Bundle before environment, as Apple checks.
        #expect(
            reason {
                _ = try verifier.verifyTransaction(
                    try! ca.sign(Self.transaction(environment: .production, bundle: "x")), source: "t")
            } == .bundle)
        // An App Store-signed token cannot claim Xcode, even where Xcode is accepted.
        let both = Self.sandboxVerifier(ca, environments: [.sandbox, .xcode])
        #expect(
            reason { _ = try both.verifyTransaction(try! ca.sign(Self.transaction(environment: .xcode)), source: "t") }
                == .environment)
        // No environment at all.
        var bare = Self.transaction()
        bare.environment = nil
        #expect(reason { _ = try verifier.verifyTransaction(try! ca.sign(bare), source: "t") } == .environment)
        // Renewal infos have no bundle id: only the environment.
        #expect(
            reason {
                _ = try verifier.verifyRenewalInfo(
                    try! ca.sign(
                        AppStoreRenewalInfo(
                            signedDate: Date(appStoreMilliseconds: 1_763_000_000_000), environment: .sandbox)),
                    source: "r"
                )
            } == nil)
        #expect(
            reason {
                _ = try verifier.verifyRenewalInfo(
                    try! ca.sign(
                        AppStoreRenewalInfo(
                            signedDate: Date(appStoreMilliseconds: 1_763_000_000_000), environment: .production)),
                    source: "r")
            } == .environment)
        // Production notifications must carry the app's appAppleId when the anchors give one.
        let production = AppStoreVerifier(
            anchors: TrustAnchors(
                appStoreRoots: [ca.rootCertificateDER], bundleID: Self.bundle,
                environments: [.production], appAppleID: 42))
        func note(_ id: Int64?) -> String {
            try! ca.sign(
                AppStoreNotification(
                    notificationType: "TEST",
                    data: .init(appAppleId: id, bundleId: Self.bundle, environment: .production),
                    signedDate: Date(appStoreMilliseconds: 1_763_000_000_000)))
        }
        #expect(reason { _ = try production.verifyNotification(note(42), source: "n") } == nil)
        #expect(reason { _ = try production.verifyNotification(note(43), source: "n") } == .appID)
        #expect(reason { _ = try production.verifyNotification(note(nil), source: "n") } == .appID)
    }

    @Test func malformedTokens() throws {
        let dir = TemporaryDirectory()
        let ca = try TestAppStoreCA(directory: dir.path)
        let verifier = Self.sandboxVerifier(ca)
        let jws = try ca.sign(Self.transaction())
        let parts = jws.split(separator: ".").map(String.init)
        func reason(_ token: String) -> AppStoreVerificationError.Reason? {
            Self.reason { _ = try verifier.verifyTransaction(token, source: "t") }
        }
        func header(_ json: String) -> String { Base64URL.encode(Array(json.utf8)) }
        #expect(reason("") == .malformed)
        #expect(reason(parts[0] + "." + parts[1] + ".") == .malformed)
        #expect(reason(parts[0] + ".." + parts[2]) == .malformed)
        #expect(reason(jws + "=") == .malformed)
        #expect(reason(String(repeating: "A", count: 70_000) + ".A.A") == .malformed)
        #expect(reason(header(#"{"alg":"none","x5c":[]}"#) + "." + parts[1] + "." + parts[2]) == .malformed)
        #expect(reason(header(#"{"alg":"EdDSA"}"#) + "." + parts[1] + "." + parts[2]) == .malformed)
        #expect(
            reason(header(#"{"alg":"ES256","x5c":["AA==","AA=="]}"#) + "." + parts[1] + "." + parts[2]) == .malformed)
        #expect(
            reason(header(#"{"alg":"ES256","x5c":["AA==","AA==","AA=="]}"#) + "." + parts[1] + "." + parts[2]) == .chain
        )
        #expect(
            reason(header(#"{"alg":"ES256","x5c":["not base64!","AA==","AA=="]}"#) + "." + parts[1] + "." + parts[2])
                == .chain)
        #expect(
            reason(header(#"{"alg":"ES256","crit":["b64"],"x5c":[]}"#) + "." + parts[1] + "." + parts[2]) == .malformed)
        #expect(reason(header("[1]") + "." + parts[1] + "." + parts[2]) == .malformed)
        // A signature of the wrong length.
        #expect(
            reason(parts[0] + "." + parts[1] + "." + Base64URL.encode([UInt8](repeating: 1, count: 65))) == .signature)
        // Signed, but a date before 1970, or a wrong type: the payload is malformed.
        struct Odd: Encodable {
            var bundleId = "com.tilepack.test"; var environment = "Sandbox"; var purchaseDate: Double
        }
        #expect(reason(try ca.sign(Odd(purchaseDate: -1))) == .malformed)
        #expect(reason(try ca.sign(Odd(purchaseDate: 1e300))) == .malformed)
        #expect(reason(try ca.sign(Odd(purchaseDate: 1_697_679_936_049.7297))) == nil)
        #expect(reason(try ca.sign(["type": "Subscription?"])) == .malformed)
        #expect(reason(try ca.sign([1, 2])) == .malformed)
        // Unknown fields are ignored.
        struct Extra: Encodable {
            var bundleId = "com.tilepack.test"; var environment = "Sandbox"; var futureField = ["a": 1]
        }
        #expect(reason(try ca.sign(Extra())) == nil)
    }

    @Test func chainsAreCachedPerPair() throws {
        let dir = TemporaryDirectory()
        let ca = try TestAppStoreCA(directory: dir.path)
        let verifier = Self.sandboxVerifier(ca)
        let tokens = try (0..<20).map { i in
            var t = Self.transaction()
            t.transactionId = "\(2_000_000_100 + i)"
            return try ca.sign(t)
        }
        #expect(verifier.cachedChainCount == 0)
        for token in tokens { _ = try verifier.verifyTransaction(token, source: "t") }
        #expect(verifier.cachedChainCount == 1)
        // A signedDate outside the chain's validity is checked again, and fails.
        var late = Self.transaction()
        late.signedDate = Date(appStoreMilliseconds: 2_600_000_000_000)
        let lateToken = try ca.sign(late)
        let error = Self.failure { _ = try verifier.verifyTransaction(lateToken, source: "t") }
        #expect(error?.code == .chain)
        #expect(error?.detail.contains("expired") == true)
    }

    /// Chain validation runs swift-certificates' async verifier on the calling thread: many
    /// verifications at once from tasks of the cooperative pool (as `serve` would) all finish.
    @Test(.timeLimit(.minutes(1))) func verifiesFromManyTasksAtOnce() async throws {
        let dir = TemporaryDirectory()
        let ca = try TestAppStoreCA(directory: dir.path)
        let anchors = TrustAnchors(
            appStoreRoots: [ca.rootCertificateDER], bundleID: Self.bundle, environments: [.sandbox])
        let jws = try ca.sign(Self.transaction())
        let verified = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<32 {
                group.addTask {
                    try AppStoreVerifier(anchors: anchors).verifyTransaction(jws, source: "t") == Self.transaction()
                        ? 1 : 0
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(verified == 32)
    }

    /// Measures one verification with its chain not cached (a fresh verifier) and cached; the
    /// fastest of 30 runs each, so a loaded machine does not invert them.
    @Test func verificationCost() throws {
        let dir = TemporaryDirectory()
        let ca = try TestAppStoreCA(directory: dir.path)
        let anchors = TrustAnchors(
            appStoreRoots: [ca.rootCertificateDER], bundleID: Self.bundle, environments: [.sandbox])
        let jws = try ca.sign(Self.transaction())
        let clock = ContinuousClock()
        var cold = Duration.seconds(1000), warm = Duration.seconds(1000)
        let verifier = AppStoreVerifier(anchors: anchors)
        _ = try verifier.verifyTransaction(jws, source: "warm-up")
        for _ in 0..<30 {
            cold = min(
                cold,
                try clock.measure { _ = try AppStoreVerifier(anchors: anchors).verifyTransaction(jws, source: "t") })
            warm = min(warm, try clock.measure { _ = try verifier.verifyTransaction(jws, source: "t") })
        }
        func micros(_ d: Duration) -> Int {
            Int(Double(d.components.seconds) * 1e6 + Double(d.components.attoseconds) / 1e12)
        }
        print(
            """
            AppStoreVerifier cost (this build): chain validated \(micros(cold)) µs, chain cached \(micros(warm)) \
            µs per token
            """
        )
        #expect(warm < cold)
    }

    // MARK: - Errors

    @Test func errorDescriptionsAreOneLine() {
        let error = AppStoreVerificationError(.appID, source: "ledger\nrow 3", "appAppleId 1\nis wrong")
        #expect(error.description == "ledger row 3: app_id: appAppleId 1 is wrong")
        #expect(error.category == .invalidInput)
        #expect(
            AppStoreVerificationError.Reason.allCases.map(\.rawValue)
                == ["malformed", "chain", "signature", "bundle", "app_id", "environment", "expired", "revoked"])
    }

    @Test func transactionProblems() {
        var t = Self.transaction()
        #expect(t.problem(at: Date(appStoreMilliseconds: 1_763_000_000_000)) == nil)
        t.expiresDate = Date(appStoreMilliseconds: 1_800_000_000_000)
        #expect(t.problem(at: Date(appStoreMilliseconds: 1_799_999_999_999)) == nil)
        #expect(t.problem(at: Date(appStoreMilliseconds: 1_800_000_000_000)) == .expired)
        t.revocationDate = Date(appStoreMilliseconds: 1_790_000_000_000)
        t.revocationReason = 0
        #expect(t.problem(at: Date(appStoreMilliseconds: 1_763_000_000_000)) == .revoked)
    }

    @Test func encodingWritesOnlyPresentFieldsSorted() throws {
        let json = try JSONOutput.string(
            AppStoreRenewalInfo(
                originalTransactionId: "7", autoRenewStatus: 1, signedDate: Date(appStoreMilliseconds: 5),
                environment: .sandbox))
        #expect(json == #"{"autoRenewStatus":1,"environment":"Sandbox","originalTransactionId":"7","signedDate":5}"#)
        let decoded = try JSONDecoder().decode(
            AppStoreTransaction.self, from: Data(try JSONOutput.string(Self.transaction()).utf8))
        #expect(decoded == Self.transaction())
    }

    // MARK: - Trust files

    static func writeTrust(_ dir: TemporaryDirectory, _ json: String, name: String = "trust.json") throws -> String {
        try dir.write(name, Array(json.utf8))
    }

    @Test func trustFileGood() throws {
        let dir = TemporaryDirectory()
        let root = try Self.bytes("certs/testCA.der")
        _ = try dir.write("AppStoreRoot.der", root)
        _ = try dir.write("Apple.cer", try Self.bytes("chain/AppleRootCA-G3.der"))
        let key = JWK(publicKey: try .init(rawRepresentation: [UInt8](repeating: 7, count: 32)))
        let keyJSON = try key.jsonString()
        let path = try Self.writeTrust(
            dir,
            """
            {"bundle_id": "com.example", "environments": ["Sandbox", "Production"], "app_apple_id": 1234,
             "app_store_roots": ["AppStoreRoot.der", "Apple.cer", "\(Data(root).base64EncodedString())"],
             "xcode_roots": [], "publisher_keys": [\(keyJSON)]}
            """)
        // Relative paths are relative to the trust file, not to the working directory.
        #expect(FileManager.default.currentDirectoryPath != dir.path)
        let anchors = try TrustAnchors(contentsOf: path)
        #expect(anchors.bundleID == "com.example")
        #expect(anchors.environments == [.sandbox, .production])
        #expect(anchors.appAppleID == 1234)
        #expect(anchors.appStoreRoots == [root, try Self.bytes("chain/AppleRootCA-G3.der"), root])
        #expect(anchors.publisherKeys == [key])
        // jsonString writes the same schema, read back equal.
        let copy = try Self.writeTrust(dir, try anchors.jsonString(), name: "copy.json")
        #expect(try TrustAnchors(contentsOf: copy) == anchors)
        // Optional fields may be left out.
        let minimal = try Self.writeTrust(
            dir, #"{"bundle_id":"a.b","environments":["Sandbox"],"app_store_roots":["AppStoreRoot.der"]}"#,
            name: "min.json")
        #expect(try TrustAnchors(contentsOf: minimal).publisherKeys.isEmpty)
    }

    @Test func trustFileErrors() throws {
        let dir = TemporaryDirectory()
        _ = try dir.write("root.der", try Self.bytes("certs/testCA.der"))
        _ = try dir.write("junk.der", [1, 2, 3])
        let privateKey = JWK(privateKey: try .init(rawRepresentation: [UInt8](repeating: 9, count: 32)))
        let cases: [(String, String)] = [
            (
                #"{"bundle_id":"a","environments":["Sandbox"],"app_store_roots":["root.der"],"colour":"red"}"#,
                #"trust.json: "colour": unknown key"#
            ),
            (
                #"{"bundle_id":"a","environments":["Sandbox"],"app_store_roots":["root.der"],"publisher_keys":[\#(try privateKey.jsonString())]}"#,
                "trust.json: publisher_keys[0].d: a trust file holds public keys only"
            ),
            (#"{"environments":["Sandbox"],"app_store_roots":["root.der"]}"#, "trust.json: bundle_id: is required"),
            (#"{"bundle_id":"a","app_store_roots":["root.der"]}"#, "trust.json: environments: is required"),
            (
                #"{"bundle_id":"a","environments":[],"app_store_roots":["root.der"]}"#,
                "trust.json: environments: is empty"
            ),
            (
                #"{"bundle_id":"a","environments":["LocalTesting"],"app_store_roots":["root.der"]}"#,
                "trust.json: environments[0]: \"LocalTesting\" is not"
            ),
            (
                #"{"bundle_id":"a","environments":["Sandbox","Sandbox"],"app_store_roots":["root.der"]}"#,
                "trust.json: environments[1]: Sandbox is listed twice"
            ),
            (
                #"{"bundle_id":"a b","environments":["Sandbox"],"app_store_roots":["root.der"]}"#,
                "trust.json: bundle_id: \"a b\" is not a bundle identifier"
            ),
            (#"{"bundle_id":"a","environments":["Sandbox"]}"#, "trust.json: app_store_roots: is empty"),
            (#"{"bundle_id":"a","environments":["Xcode"]}"#, "trust.json: xcode_roots: is empty"),
            (
                #"{"bundle_id":"a","environments":["Sandbox"],"app_store_roots":["missing.der"]}"#,
                "trust.json: app_store_roots[0]: "
            ),
            (
                #"{"bundle_id":"a","environments":["Sandbox"],"app_store_roots":["junk.der"]}"#,
                "trust.json: app_store_roots[0]: "
            ),
            (
                #"{"bundle_id":"a","environments":["Sandbox"],"app_store_roots":["AAAA"]}"#,
                "trust.json: app_store_roots[0]: base64 text that is not"
            ),
            (
                #"{"bundle_id":"a","environments":["Sandbox"],"app_store_roots":["root.pem"]}"#,
                "trust.json: app_store_roots[0]: neither base64"
            ),
            (
                #"{"bundle_id":"a","environments":["Sandbox"],"app_store_roots":"root.der"}"#,
                "trust.json: app_store_roots: must be an array of strings"
            ),
            (
                #"{"bundle_id":"a","environments":["Sandbox"],"app_store_roots":["root.der"],"app_apple_id":"12"}"#,
                "trust.json: app_apple_id: must be an integer"
            ),
            (
                #"{"bundle_id":"a","environments":["Sandbox"],"app_store_roots":["root.der"],"publisher_keys":[{"kty":"RSA","crv":"x","x":"AA"}]}"#,
                "trust.json: publisher_keys[0]: "
            ),
            ("[]", "trust.json: not a JSON object"),
            ("{", "trust.json: not a JSON object"),
        ]
        for (json, expected) in cases {
            let path = try Self.writeTrust(dir, json)
            do {
                _ = try TrustAnchors(contentsOf: path)
                Issue.record("accepted: \(json)")
            } catch let error as TrustFileError {
                let text = error.description.replacingOccurrences(of: dir.path + "/", with: "")
                #expect(text.hasPrefix(expected), "\(text)")
                #expect(!text.contains("\n"))
            }
        }
        // Too large, missing.
        let big = try Self.writeTrust(
            dir, "{" + String(repeating: " ", count: TrustAnchors.maxFileBytes) + "}", name: "big.json")
        #expect(throws: TrustFileError.self) { try TrustAnchors(contentsOf: big) }
        do {
            _ = try TrustAnchors(contentsOf: dir.path + "/none.json")
        } catch let error as TrustFileError {
            #expect(error.category == .notFound)
        }
    }

    /// A FIFO (as trust file or as a root file) fails at once instead of waiting for a writer.
    @Test(.timeLimit(.minutes(1))) func trustFileFIFOFailsFast() throws {
        let dir = TemporaryDirectory()
        #expect(mkfifo(dir.path + "/trust.json", 0o600) == 0)
        #expect(mkfifo(dir.path + "/root.der", 0o600) == 0)
        let start = ContinuousClock.now
        do {
            _ = try TrustAnchors(contentsOf: dir.path + "/trust.json")
            Issue.record("a FIFO was read as a trust file")
        } catch let error as TrustFileError {
            #expect(error.description == "\(dir.path)/trust.json: is a FIFO, not a regular file")
        }
        let real = try Self.writeTrust(
            dir, #"{"bundle_id":"a","environments":["Sandbox"],"app_store_roots":["root.der"]}"#, name: "real.json")
        do {
            _ = try TrustAnchors(contentsOf: real)
            Issue.record("a FIFO was read as a root")
        } catch let error as TrustFileError {
            #expect(error.subject.hasSuffix(": app_store_roots[0]"))
            #expect(error.detail.hasSuffix("root.der: is a FIFO, not a regular file"))
        }
        // A FIFO's open would block for ever; 5 s tells that from a slow run under TSan.
        #expect(ContinuousClock.now - start < .seconds(5))
    }

    @Test func defaultTrustPath() {
        #expect(
            TrustAnchors.defaultPath(environment: ["XDG_CONFIG_HOME": "/x/cfg", "HOME": "/home/u"])
                == "/x/cfg/tilepack/trust.json")
        #expect(
            TrustAnchors.defaultPath(environment: ["XDG_CONFIG_HOME": "relative", "HOME": "/home/u"])
                == "/home/u/.config/tilepack/trust.json")
        #expect(TrustAnchors.defaultPath(environment: ["HOME": "/home/u"]) == "/home/u/.config/tilepack/trust.json")
        #expect(TrustAnchors.defaultPath(environment: [:]) == nil)
    }
}
