import TilePackCore
import X509
import SwiftASN1
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The trust file: one JSON object, every key known, at most 1 MiB.
///
/// ```json
/// {"bundle_id": "com.example.maps", "environments": ["Sandbox"], "app_apple_id": 1234567890,
///  "app_store_roots": ["AppStoreRoot.der"], "xcode_roots": [],
///  "publisher_keys": [{"kty": "OKP", "crv": "Ed25519", "x": "…", "kid": "…"}]}
/// ```
extension TrustAnchors {
    /// The largest trust file read.
    public static let maxFileBytes = 1 << 20
    /// The largest certificate file (`.der`, `.cer`) a trust file may name.
    public static let maxCertificateBytes = 64 * 1024

    /// Reads the trust file at `path`. `bundle_id` and a non-empty `environments` (of
    /// `Production`, `Sandbox`, `Xcode`) are required; `app_apple_id` is optional;
    /// `app_store_roots` and `xcode_roots` hold base64 DER certificates or paths ending `.der`
    /// or `.cer` (relative to the trust file's directory); `publisher_keys` holds public JWKs
    /// (one carrying `d` is refused: a trust file holds no private key). An unknown key is an
    /// error naming it; so is an environment with no root to check it against.
    ///
    /// The file must be a regular file: it is opened non-blocking, so a FIFO fails at once.
    /// - Cost: one read of the file (and of each certificate file), one JSON parse, one DER
    ///   parse per root.
    public init(contentsOf path: String) throws {
        let bytes = try TrustAnchors.readRegularFile(
            path, limit: TrustAnchors.maxFileBytes, trustFile: path, field: nil)
        let document: TrustFileDocument
        do {
            document = try JSONDecoder().decode(TrustFileDocument.self, from: Data(bytes))
        } catch let problem as TrustFileDocument.Problem {
            throw TrustFileError(path: path, field: problem.field, problem.detail)
        } catch {
            throw TrustFileError(path: path, "not a JSON object (\(appStoreDecodingProblem(error)))")
        }

        let bundle = document.bundleID
        if let problem = TrustAnchors.bundleIDProblem(bundle) {
            throw TrustFileError(path: path, field: "bundle_id", problem)
        }
        guard !document.environments.isEmpty else {
            throw TrustFileError(path: path, field: "environments", "is empty: list Production, Sandbox or Xcode")
        }
        var environments: Set<AppStoreEnvironment> = []
        for (i, name) in document.environments.enumerated() {
            guard let environment = AppStoreEnvironment(rawValue: name), environment != .localTesting else {
                throw TrustFileError(
                    path: path, field: "environments[\(i)]",
                    "\(ErrorText.quoted(name)) is not Production, Sandbox or Xcode")
            }
            guard environments.insert(environment).inserted else {
                throw TrustFileError(path: path, field: "environments[\(i)]", "\(name) is listed twice")
            }
        }
        if let id = document.appAppleID, id <= 0 {
            throw TrustFileError(path: path, field: "app_apple_id", "\(id) is not a positive App Store app identifier")
        }
        let appStoreRoots = try document.appStoreRoots.enumerated().map { (i, entry) throws(TrustFileError) in
            try TrustAnchors.certificate(entry, trustFile: path, field: "app_store_roots[\(i)]")
        }
        let xcodeRoots = try document.xcodeRoots.enumerated().map { (i, entry) throws(TrustFileError) in
            try TrustAnchors.certificate(entry, trustFile: path, field: "xcode_roots[\(i)]")
        }
        if appStoreRoots.isEmpty, let listed = environments.first(where: \.isSignedByAppStore) {
            throw TrustFileError(
                path: path, field: "app_store_roots",
                "is empty, so no \(listed.rawValue) token could verify: add the App Store root certificate")
        }
        if xcodeRoots.isEmpty, environments.contains(.xcode) {
            throw TrustFileError(
                path: path, field: "xcode_roots",
                """
                is empty, so no Xcode token could verify: add StoreKit Testing's certificate (Xcode tokens are \
                never accepted unsigned)
                """
            )
        }
        var keys: [JWK] = []
        for (i, key) in document.publisherKeys.enumerated() {
            if key.d != nil {
                throw TrustFileError(
                    path: path, field: "publisher_keys[\(i)].d",
                    "a trust file holds public keys only: remove the private part d")
            }
            do {
                _ = try key.publicKey(source: "publisher_keys[\(i)]")
            } catch {
                throw TrustFileError(path: path, field: "publisher_keys[\(i)]", error.detailText)
            }
            keys.append(key)
        }
        self.init(
            appStoreRoots: appStoreRoots, xcodeRoots: xcodeRoots, bundleID: bundle, environments: environments,
            appAppleID: document.appAppleID, publisherKeys: keys)
    }

    /// Why `bundleID` is not acceptable as an app's bundle identifier (1–255 printable ASCII
    /// characters, no spaces), or nil.
    public static func bundleIDProblem(_ bundleID: String) -> String? {
        if bundleID.isEmpty || bundleID.utf8.count > 255 || bundleID.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F })
        {
            return
                "\(ErrorText.quoted(bundleID)) is not a bundle identifier (1–255 printable ASCII characters, no spaces)"
        }
        return nil
    }

    /// These anchors as a trust file (sorted keys, roots as base64 DER, public keys only), the
    /// schema ``init(contentsOf:)`` reads. Throws for `LocalTesting`, which a trust file cannot name.
    /// - Cost: one JSON encode.
    public func jsonString() throws -> String {
        if environments.contains(.localTesting) {
            throw TrustFileError(
                path: "trust anchors", field: "environments", "LocalTesting cannot be written to a trust file")
        }
        let document = TrustFileDocument(
            bundleID: bundleID,
            environments: AppStoreEnvironment.allCases.filter(environments.contains).map(\.rawValue),
            appAppleID: appAppleID,
            appStoreRoots: appStoreRoots.map { Data($0).base64EncodedString() },
            xcodeRoots: xcodeRoots.map { Data($0).base64EncodedString() },
            publisherKeys: publisherKeys.map(\.publicJWK))
        return try JSONOutput.string(document)
    }

    /// A root entry: a path ending `.der`/`.cer` (relative to the trust file's directory; DER,
    /// or PEM), else base64 DER. Either way it must parse as an X.509 certificate.
    private static func certificate(_ entry: String, trustFile: String, field: String) throws(TrustFileError) -> [UInt8]
    {
        let lower = entry.lowercased()
        var der: [UInt8]
        if lower.hasSuffix(".der") || lower.hasSuffix(".cer") {
            let file: String
            if entry.hasPrefix("/") {
                file = entry
            } else if let slash = trustFile.lastIndex(of: "/") {
                file = String(trustFile[...slash]) + entry
            } else {
                file = entry
            }
            der = try readRegularFile(file, limit: maxCertificateBytes, trustFile: trustFile, field: field)
            if der.starts(with: Array("-----BEGIN".utf8)) {
                guard let certificate = try? Certificate(pemEncoded: String(decoding: der, as: UTF8.self)),
                    let bytes = try? TrustAnchors.derBytes(certificate)
                else {
                    throw TrustFileError(path: trustFile, field: field, "\(file): not a PEM certificate")
                }
                der = bytes
            }
            guard (try? Certificate(derEncoded: der)) != nil else {
                throw TrustFileError(path: trustFile, field: field, "\(file): not a DER X.509 certificate")
            }
        } else {
            guard let data = Data(base64Encoded: entry) else {
                throw TrustFileError(path: trustFile, field: field, "neither base64 DER nor a path ending .der or .cer")
            }
            der = Array(data)
            guard (try? Certificate(derEncoded: der)) != nil else {
                throw TrustFileError(path: trustFile, field: field, "base64 text that is not a DER X.509 certificate")
            }
        }
        return der
    }

    static func derBytes(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    /// The whole of `path` (at most `limit` bytes), which must be a regular file: a FIFO or a
    /// device fails at once (``RegionFiles/regularFileBytes(path:limit:privateFile:)``).
    private static func readRegularFile(
        _ path: String, limit: Int, trustFile: String, field: String?
    ) throws(TrustFileError) -> [UInt8] {
        do {
            return try RegionFiles.regularFileBytes(path: path, limit: limit)
        } catch {
            throw field == nil
                ? TrustFileError(path: path, error.problem, category: error.category)
                : TrustFileError(path: trustFile, field: field, "\(path): \(error.problem)", category: error.category)
        }
    }
}

/// The trust file's JSON, field by field. Decoding refuses a key it does not know and names
/// the field of every problem (``Problem``), so the caller can say `path: field: detail`.
struct TrustFileDocument: Codable {
    var bundleID: String
    var environments: [String]
    var appAppleID: Int64?
    var appStoreRoots: [String]
    var xcodeRoots: [String]
    var publisherKeys: [JWK]

    struct Problem: Error {
        var field: String?
        var detail: String
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case bundleID = "bundle_id", environments, appAppleID = "app_apple_id", appStoreRoots = "app_store_roots"
        case xcodeRoots = "xcode_roots", publisherKeys = "publisher_keys"
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(
        bundleID: String, environments: [String], appAppleID: Int64?, appStoreRoots: [String], xcodeRoots: [String],
        publisherKeys: [JWK]
    ) {
        self.bundleID = bundleID
        self.environments = environments
        self.appAppleID = appAppleID
        self.appStoreRoots = appStoreRoots
        self.xcodeRoots = xcodeRoots
        self.publisherKeys = publisherKeys
    }

    init(from decoder: any Decoder) throws {
        let all: KeyedDecodingContainer<AnyKey>
        do {
            all = try decoder.container(keyedBy: AnyKey.self)
        } catch {
            throw Problem(field: nil, detail: "not a JSON object")
        }
        let known = Set(CodingKeys.allCases.map(\.stringValue))
        for key in all.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) where !known.contains(key.stringValue) {
            throw Problem(
                field: ErrorText.quoted(key.stringValue),
                detail: "unknown key (known: \(known.sorted().joined(separator: ", ")))")
        }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func field<T: Decodable>(_ key: CodingKeys, _ what: String, required: Bool) throws -> T? {
            guard c.contains(key) else {
                if required { throw Problem(field: key.stringValue, detail: "is required") }
                return nil
            }
            do {
                return try c.decode(T.self, forKey: key)
            } catch {
                throw Problem(field: key.stringValue, detail: "must be \(what)")
            }
        }
        bundleID = try field(.bundleID, "a string", required: true)!
        environments = try field(.environments, "an array of strings", required: true)!
        appAppleID = try field(.appAppleID, "an integer", required: false)
        appStoreRoots = try field(.appStoreRoots, "an array of strings", required: false) ?? []
        xcodeRoots = try field(.xcodeRoots, "an array of strings", required: false) ?? []
        var keys: [JWK] = []
        if c.contains(.publisherKeys) {
            var list: UnkeyedDecodingContainer
            do {
                list = try c.nestedUnkeyedContainer(forKey: .publisherKeys)
            } catch {
                throw Problem(field: "publisher_keys", detail: "must be an array of JWK objects")
            }
            while !list.isAtEnd {
                let index = list.currentIndex
                do {
                    keys.append(try list.decode(JWK.self))
                } catch {
                    throw Problem(
                        field: "publisher_keys[\(index)]", detail: "not a JWK (a JSON object with string kty, crv, x)")
                }
            }
        }
        publisherKeys = keys
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(bundleID, forKey: .bundleID)
        try c.encode(environments, forKey: .environments)
        try c.encodeIfPresent(appAppleID, forKey: .appAppleID)
        try c.encode(appStoreRoots, forKey: .appStoreRoots)
        try c.encode(xcodeRoots, forKey: .xcodeRoots)
        try c.encode(publisherKeys, forKey: .publisherKeys)
    }
}
