import TilePackCore
import TilePackRegions
import Crypto
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

/// The test App Store's certificate authority, as StoreKit Testing has one: a P-256 root
/// ("tilepack Test App Store Root CA"), an intermediate carrying Apple's WWDR intermediate OID
/// (1.2.840.113635.100.6.2.1) and a signing leaf carrying Apple's receipt-signing OID
/// (1.2.840.113635.100.6.11.1), all valid 2020-01-01 … 2049-12-31. Tokens it signs have exactly
/// the App Store's format, so a device verifies them with the code that verifies Apple's, once
/// its trust file pins this root for Sandbox.
///
/// It stands for Apple's servers and is never part of the app (it lives in `TilePackTools`).
/// Only the root certificate is published, at ``rootCertificatePath``
/// (`DIRECTORY/AppStoreRoot.der`); the keys (PEM, mode 0600) and certificates (DER) live in
/// `DIRECTORY/TestAppStoreCA/`.
///
/// ```swift
/// let ca = try TestAppStoreCA(directory: simulatorDirectory)
/// let jws = try ca.sign(AppStoreTransaction(transactionId: "1", bundleId: "com.example.maps", …))
/// ```
///
/// The first use of a directory creates the CA in a temporary folder renamed into place, so
/// processes racing to create it agree on one CA; later uses load it.
/// - Cost: creating generates three P-256 keys and signs three certificates (~1 ms); loading
///   reads six small files; ``sign(_:)`` is one P-256 signature.
public final class TestAppStoreCA: Sendable {
    public let directory: String
    /// The root certificate (DER): what a trust file's `app_store_roots` pins.
    public let rootCertificateDER: [UInt8]
    public let intermediateCertificateDER: [UInt8]
    public let leafCertificateDER: [UInt8]
    /// Signs with the leaf key and writes `x5c` = [leaf, intermediate, root].
    public let signer: AppStoreJWSSigner

    /// Where the root certificate is published: `DIRECTORY/AppStoreRoot.der`.
    public var rootCertificatePath: String { directory + "/AppStoreRoot.der" }

    /// The common name of the root certificate.
    public static let rootName = "tilepack Test App Store Root CA"
    static let folderName = "TestAppStoreCA"

    /// Loads the CA kept in `directory`, creating it (and the directory, mode 0700) the first time.
    public init(directory: String) throws {
        self.directory = directory
        try RegionFiles.makeDirectories(directory)
        let folder = directory + "/" + Self.folderName
        if !Self.exists(folder) { try Self.create(folder: folder, in: directory) }

        func read(_ name: String, privateFile: Bool = false) throws -> [UInt8] {
            try RegionFiles.contents(path: folder + "/" + name, limit: 64 * 1024, privateFile: privateFile)
        }
        rootCertificateDER = try read("root.der")
        intermediateCertificateDER = try read("intermediate.der")
        leafCertificateDER = try read("leaf.der")
        let leafPEM = try read("leaf.key.pem", privateFile: true)
        let leafKey: P256.Signing.PrivateKey
        do {
            leafKey = try P256.Signing.PrivateKey(pemRepresentation: String(decoding: leafPEM, as: UTF8.self))
        } catch {
            throw InputFileError(path: folder + "/leaf.key.pem", detail: "not a P-256 private key in PEM")
        }
        let leaf = try Certificate(derEncoded: leafCertificateDER)
        guard leaf.publicKey == Certificate.PublicKey(leafKey.publicKey) else {
            throw InputFileError(path: folder + "/leaf.der", detail: "the leaf certificate is not for leaf.key.pem")
        }
        signer = AppStoreJWSSigner(
            leafKey: leafKey, certificateChain: [leafCertificateDER, intermediateCertificateDER, rootCertificateDER])

        // Publish (or restore) the root beside the CA folder.
        let published = try? RegionFiles.contents(path: rootCertificatePath, limit: 64 * 1024)
        if published != rootCertificateDER {
            try RegionFiles.writeAtomically(path: rootCertificatePath, bytes: rootCertificateDER, mode: 0o644)
        }
    }

    /// `payload` as App Store signed data (see ``AppStoreJWSSigner``).
    public func sign(_ payload: some Encodable) throws -> String { try signer.sign(payload) }

    // MARK: - Creating

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Generates the three keys and certificates into a temporary folder beside `folder` and
    /// renames it into place; when another process got there first its CA wins.
    private static func create(folder: String, in directory: String) throws {
        let temporary =
            "\(directory)/.\(folderName).tmp-\(getpid())-\(String(UInt64.random(in: .min ... .max), radix: 36))"
        guard mkdir(temporary, 0o700) == 0 else {
            throw InputFileError(
                path: temporary, detail: "cannot create directory (\(AtomicReplacement.message(errno)))")
        }
        var written: [String] = []
        defer {
            for name in written { unlink(temporary + "/" + name) }
            rmdir(temporary)
        }
        for (name, bytes, mode) in try makeFiles() {
            try RegionFiles.writeAtomically(path: temporary + "/" + name, bytes: bytes, mode: mode)
            written.append(name)
        }
        if rename(temporary, folder) == 0 {
            written.removeAll()
            return
        }
        let code = errno
        guard code == EEXIST || code == ENOTEMPTY else {
            throw InputFileError(path: folder, detail: "cannot rename into place (\(AtomicReplacement.message(code)))")
        }
    }

    /// The CA's files: (name, bytes, mode).
    private static func makeFiles() throws -> [(String, [UInt8], mode_t)] {
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()
        let notBefore = Date(timeIntervalSince1970: 1_577_836_800)  // 2020-01-01T00:00:00Z
        let notAfter = Date(timeIntervalSince1970: 2_524_607_999)  // 2049-12-31T23:59:59Z
        let organization = "tilepack Test App Store"
        let rootName = try DistinguishedName {
            CommonName(Self.rootName)
            OrganizationName(organization)
        }
        let intermediateName = try DistinguishedName {
            CommonName("tilepack Test App Store Intermediate CA")
            OrganizationName(organization)
        }
        let leafName = try DistinguishedName {
            CommonName("tilepack Test App Store Signing")
            OrganizationName(organization)
        }
        let rootPublic = Certificate.PublicKey(rootKey.publicKey)
        let intermediatePublic = Certificate.PublicKey(intermediateKey.publicKey)
        let leafPublic = Certificate.PublicKey(leafKey.publicKey)
        let rootID = SubjectKeyIdentifier(hash: rootPublic)
        let intermediateID = SubjectKeyIdentifier(hash: intermediatePublic)
        // Apple's markers carry an ASN.1 NULL; only their presence is checked.
        let null: ArraySlice<UInt8> = [0x05, 0x00]

        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: rootPublic,
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: rootName, subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                rootID
            },
            issuerPrivateKey: .init(rootKey))
        let intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: intermediatePublic,
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: rootName, subject: intermediateName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                intermediateID
                AuthorityKeyIdentifier(keyIdentifier: rootID.keyIdentifier)
                Certificate.Extension(oid: [1, 2, 840, 113_635, 100, 6, 2, 1], critical: false, value: null)
            },
            issuerPrivateKey: .init(rootKey))
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: leafPublic,
            notValidBefore: notBefore, notValidAfter: notAfter, issuer: intermediateName, subject: leafName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                SubjectKeyIdentifier(hash: leafPublic)
                AuthorityKeyIdentifier(keyIdentifier: intermediateID.keyIdentifier)
                Certificate.Extension(oid: [1, 2, 840, 113_635, 100, 6, 11, 1], critical: false, value: null)
            },
            issuerPrivateKey: .init(intermediateKey))

        func der(_ certificate: Certificate) throws -> [UInt8] {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return serializer.serializedBytes
        }
        func pem(_ key: P256.Signing.PrivateKey) -> [UInt8] { Array((key.pemRepresentation + "\n").utf8) }
        return [
            ("root.key.pem", pem(rootKey), 0o600), ("intermediate.key.pem", pem(intermediateKey), 0o600),
            ("leaf.key.pem", pem(leafKey), 0o600),
            ("root.der", try der(root), 0o644), ("intermediate.der", try der(intermediate), 0o644),
            ("leaf.der", try der(leaf), 0o644),
        ]
    }
}
