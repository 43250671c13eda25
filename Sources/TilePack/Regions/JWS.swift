import TilePackCore
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A JWS, JWK or signed-payload problem: `subject` names where the text came from (a file, an
/// argument, a ledger row), `detail` what is wrong; `code` lets callers match without parsing text.
public struct JWSError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`;
    /// `rawValue` is the stable word scripts and JSON see.
    public struct Code: TilePackErrorCode, RawRepresentable, Codable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        /// Not three base64url parts, bad base64url, header or payload not JSON, wrong sizes.
        public static let malformed = Code(rawValue: "malformed")
        /// The header's `kid` names no key we hold (or there is no `kid`).
        public static let unknownKey = Code(rawValue: "unknownKey")
        /// `alg` is not `EdDSA` (`none` included), or the header asks for `crit` extensions.
        public static let badAlgorithm = Code(rawValue: "badAlgorithm")
        /// The Ed25519 signature does not verify over `header.payload`.
        public static let badSignature = Code(rawValue: "badSignature")
        /// A JWK (key file) is malformed, the wrong key type, or unsafe (private key readable by others).
        public static let badKey = Code(rawValue: "badKey")
    }

    public let code: Code
    /// Where the text came from: a path, an argument name, `ledger row 12`.
    public let subject: String
    /// The problem, without the source, on one line.
    public let detail: String
    public var cause: (any Error)? { nil }

    public init(_ code: Code, source: String, _ detail: String) {
        self.code = code
        self.subject = source
        self.detail = ErrorText.oneLine(detail)
    }
}

/// Base64url without padding (RFC 7515 §2, RFC 4648 §5), strict in what it accepts:
/// no `=`, no whitespace, no `+`/`/`, no length ≡ 1 (mod 4), and the unused low bits of the
/// last character must be zero, so every byte string has exactly one spelling and a token
/// cannot be altered without changing what it decodes to.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// `bytes` in base64url, unpadded.
    /// - Cost: O(n), one allocation.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((input.count * 4 + 2) / 3)
        var i = 0
        while i + 3 <= input.count {
            let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
            out.append(alphabet[Int(v >> 18 & 63)]); out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)]); out.append(alphabet[Int(v & 63)])
            i += 3
        }
        switch input.count - i {
        case 1:
            let v = UInt32(input[i]) << 16
            out.append(alphabet[Int(v >> 18 & 63)]); out.append(alphabet[Int(v >> 12 & 63)])
        case 2:
            let v = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
            out.append(alphabet[Int(v >> 18 & 63)]); out.append(alphabet[Int(v >> 12 & 63)])
            out.append(alphabet[Int(v >> 6 & 63)])
        default: break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes `text` spells, or a one-line `.malformed` error naming `source` and the
    /// first offending character.
    /// - Cost: O(n), one allocation.
    public static func decode(_ text: some StringProtocol, source: String = "base64url") throws(JWSError) -> [UInt8] {
        let chars = Array(text.utf8)
        if chars.count % 4 == 1 {
            throw JWSError(.malformed, source: source, "base64url length \(chars.count) is impossible (≡ 1 mod 4)")
        }
        var values: [UInt8] = []
        values.reserveCapacity(chars.count)
        for (offset, c) in chars.enumerated() {
            let v: UInt8
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = c - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = c - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): v = 62
            case UInt8(ascii: "_"): v = 63
            case UInt8(ascii: "="):
                throw JWSError(.malformed, source: source, "base64url must not be padded ('=' at offset \(offset))")
            default:
                throw JWSError(
                    .malformed, source: source,
                    "invalid base64url character 0x\(String(c, radix: 16)) at offset \(offset)")
            }
            values.append(v)
        }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var i = 0
        while i + 4 <= values.count {
            let v =
                UInt32(values[i]) << 18 | UInt32(values[i + 1]) << 12 | UInt32(values[i + 2]) << 6
                | UInt32(values[i + 3])
            out.append(UInt8(v >> 16 & 0xFF)); out.append(UInt8(v >> 8 & 0xFF)); out.append(UInt8(v & 0xFF))
            i += 4
        }
        switch values.count - i {
        case 2:
            guard values[i + 1] & 0x0F == 0 else {
                throw JWSError(
                    .malformed, source: source, "non-canonical base64url (unused bits set in the last character)")
            }
            out.append(values[i] << 2 | values[i + 1] >> 4)
        case 3:
            guard values[i + 2] & 0x03 == 0 else {
                throw JWSError(
                    .malformed, source: source, "non-canonical base64url (unused bits set in the last character)")
            }
            out.append(values[i] << 2 | values[i + 1] >> 4)
            out.append((values[i + 1] & 0x0F) << 4 | values[i + 2] >> 2)
        default: break
        }
        return out
    }
}

/// The protected header tilepack writes and accepts: `{"alg":"EdDSA","kid":…,"typ":…}`
/// (`typ` `JWT` by default; a signed catalog says `tilepack-catalog+jws`).
package struct JWSHeader: Codable, Sendable, Equatable {
    public var alg: String
    public var kid: String?
    public var typ: String?
    /// Critical extensions (RFC 7515 §4.1.11): we understand none, so any present is rejected.
    public var crit: [String]?

    public init(kid: String, typ: String = "JWT") {
        alg = JWS.algorithm
        self.kid = kid
        self.typ = typ
        crit = nil
    }
}

/// JWS compact serialization (RFC 7515 §7.1) with Ed25519 (`alg` `EdDSA`, RFC 8037 §3.1),
/// the format of the publisher's signed catalog (``SignedCatalog``), readable by any JOSE
/// library. App Store transactions are ES256 with an `x5c` chain: ``AppStoreVerifier``.
///
/// ```swift
/// let token = try JWS.sign(payload, key: privateKey, kid: jwk.kid!)   // "h.p.s"
/// let bytes = try JWS.verify(token, publicKeys: [jwk.kid!: publicKey])
/// ```
///
/// Cost: one Ed25519 signature or verification (~50 µs) plus JSON and base64url linear in size.
public enum JWS {
    /// The only algorithm accepted: RFC 8037's `EdDSA` (Ed25519 here). `none`, `HS256` and
    /// the rest are refused before any key is looked up.
    public static let algorithm = "EdDSA"
    /// Tokens longer than this are refused unread (a transaction is well under 2 KiB).
    public static let maxCompactLength = 64 * 1024

    /// `payload` as JSON (sorted keys), signed with `key` under `kid`.
    public static func sign(_ payload: some Encodable, key: Curve25519.Signing.PrivateKey, kid: String) throws -> String
    {
        try sign(bytes: Array(try JSONOutput.string(payload).utf8), key: key, kid: kid)
    }

    /// `bytes` as the payload, as they are, signed with `key` under `kid`, header `typ` `typ`.
    public static func sign(
        bytes: [UInt8], key: Curve25519.Signing.PrivateKey, kid: String, typ: String = "JWT"
    ) throws -> String {
        let header = Array(try JSONOutput.string(JWSHeader(kid: kid, typ: typ)).utf8)
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(bytes)
        let signature = try key.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// The header of `compact`, decoded but NOT verified (for reports and key selection).
    package static func unverifiedHeader(_ compact: String, source: String) throws(JWSError) -> JWSHeader {
        let parts = try split(compact, source: source)
        return try decodeHeader(parts.0, source: source)
    }

    /// The payload bytes of `compact` after checking, in this order: three parts, `alg` is
    /// `EdDSA`, no `crit`, `kid` names one of `publicKeys`, the signature is 64 bytes and
    /// verifies over the ASCII `header.payload`. Every failure is a ``JWSError`` naming `source`.
    /// With `type`, the header's `typ` must be exactly that (a token made for one purpose is
    /// never accepted for another).
    public static func verify(
        _ compact: String, publicKeys: [String: Curve25519.Signing.PublicKey],
        type: String? = nil, maxLength: Int = maxCompactLength,
        source: String = "JWS"
    ) throws -> [UInt8] {
        let (h, p, s) = try split(compact, maxLength: maxLength, source: source)
        let header = try decodeHeader(h, source: source)
        guard header.alg == algorithm else {
            throw JWSError(
                .badAlgorithm, source: source, "alg \(ErrorText.quoted(header.alg)) is not accepted (only EdDSA)")
        }
        if let type, header.typ != type {
            throw JWSError(
                .malformed, source: source,
                "typ \(header.typ.map(ErrorText.quoted) ?? "missing") is not \(ErrorText.quoted(type))")
        }
        if let crit = header.crit {
            throw JWSError(
                .badAlgorithm, source: source, "unsupported critical header parameters \(crit.map(ErrorText.quoted))")
        }
        guard let kid = header.kid else { throw JWSError(.unknownKey, source: source, "header has no kid") }
        guard let key = publicKeys[kid] else {
            throw JWSError(.unknownKey, source: source, "signed by unknown key \(ErrorText.quoted(kid))")
        }
        let signature = try Base64URL.decode(s, source: source)
        guard signature.count == 64 else {
            throw JWSError(.malformed, source: source, "Ed25519 signature is \(signature.count) bytes, expected 64")
        }
        let signingInput = compact.utf8.prefix(h.utf8.count + 1 + p.utf8.count)
        guard key.isValidSignature(signature, for: Array(signingInput)) else {
            throw JWSError(.badSignature, source: source, "signature does not verify with key \(ErrorText.quoted(kid))")
        }
        return try Base64URL.decode(p, source: source)
    }

    private static func split(
        _ compact: String, maxLength: Int = maxCompactLength,
        source: String
    ) throws(JWSError) -> (Substring, Substring, Substring) {
        guard compact.utf8.count <= maxLength else {
            throw JWSError(
                .malformed, source: source, "JWS is \(compact.utf8.count) bytes, over the \(maxLength)-byte limit")
        }
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw JWSError(
                .malformed, source: source,
                "JWS compact serialization has \(parts.count) parts, expected 3 (header.payload.signature)")
        }
        guard !parts[0].isEmpty, !parts[1].isEmpty, !parts[2].isEmpty else {
            throw JWSError(
                .malformed, source: source, "JWS has an empty part (unsigned or detached tokens are not accepted)")
        }
        return (parts[0], parts[1], parts[2])
    }

    private static func decodeHeader(_ text: Substring, source: String) throws(JWSError) -> JWSHeader {
        let bytes = try Base64URL.decode(text, source: source)
        do {
            return try JSONDecoder().decode(JWSHeader.self, from: Data(bytes))
        } catch {
            throw JWSError(.malformed, source: source, "JWS header is not a JSON object with a string alg")
        }
    }
}

/// An Ed25519 key as a JSON Web Key (RFC 8037 §2: `kty` `OKP`, `crv` `Ed25519`, `x` the public
/// key, `d` the private key when present). The publisher keeps the private half (mode 0600,
/// `tilepack catalog keygen`); devices get the public half in their trust anchors.
///
/// `kid` defaults to the RFC 7638 thumbprint, so a key names itself.
public struct JWK: Codable, Sendable, Equatable {
    public var kty: String
    public var crv: String
    public var x: String
    public var d: String?
    public var kid: String?
    public var alg: String?
    public var use: String?

    /// The public JWK of `key`.
    public init(publicKey key: Curve25519.Signing.PublicKey, kid: String? = nil) {
        kty = "OKP"
        crv = "Ed25519"
        x = Base64URL.encode(key.rawRepresentation)
        d = nil
        alg = JWS.algorithm
        use = "sig"
        self.kid = kid ?? JWK.thumbprint(x: x)
    }

    /// The private JWK of `key` (carries `d`: keep it out of any file others can read).
    public init(privateKey key: Curve25519.Signing.PrivateKey, kid: String? = nil) {
        self.init(publicKey: key.publicKey, kid: kid)
        d = Base64URL.encode(key.rawRepresentation)
    }

    /// A fresh Ed25519 private key as a JWK (the system's secure random source).
    public static func newPrivateKey() -> JWK { JWK(privateKey: Curve25519.Signing.PrivateKey()) }

    /// This key without `d`.
    public var publicJWK: JWK {
        var copy = self
        copy.d = nil
        return copy
    }

    /// The key id: `kid`, or the thumbprint when the file has none.
    public var keyID: String { kid ?? JWK.thumbprint(x: x) }

    /// RFC 7638 thumbprint: base64url(SHA-256 of `{"crv":"Ed25519","kty":"OKP","x":…}`).
    public static func thumbprint(x: String) -> String {
        let canonical = #"{"crv":"Ed25519","kty":"OKP","x":"\#(x)"}"#
        return Base64URL.encode(Array(SHA256.hash(data: Array(canonical.utf8))))
    }

    /// The Ed25519 public key, after checking `kty`, `crv` and `x`.
    public func publicKey(source: String) throws -> Curve25519.Signing.PublicKey {
        guard kty == "OKP", crv == "Ed25519" else {
            throw JWSError(
                .badKey, source: source,
                "JWK is kty \(ErrorText.quoted(kty)) crv \(ErrorText.quoted(crv)), expected OKP Ed25519")
        }
        if let alg, alg != JWS.algorithm {
            throw JWSError(.badKey, source: source, "JWK alg \(ErrorText.quoted(alg)) is not EdDSA")
        }
        let raw = try Base64URL.decode(x, source: source)
        guard raw.count == 32, let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else {
            throw JWSError(
                .badKey, source: source, "JWK x is \(raw.count) bytes, expected a 32-byte Ed25519 public key")
        }
        return key
    }

    /// The Ed25519 private key from `d`, checked against `x`.
    public func privateKey(source: String) throws -> Curve25519.Signing.PrivateKey {
        guard let d else { throw JWSError(.badKey, source: source, "JWK has no private part d") }
        let publicKey = try publicKey(source: source)
        let raw = try Base64URL.decode(d, source: source)
        guard raw.count == 32, let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw) else {
            throw JWSError(.badKey, source: source, "JWK d is \(raw.count) bytes, expected a 32-byte Ed25519 seed")
        }
        guard key.publicKey.rawRepresentation == publicKey.rawRepresentation else {
            throw JWSError(.badKey, source: source, "JWK d does not match x")
        }
        return key
    }

    /// The JWK in the file at `path` (at most 64 KiB of JSON).
    /// With `requirePrivate`, the file must carry `d` and be unreadable by group and others.
    public static func read(path: String, requirePrivate: Bool = false) throws -> JWK {
        let bytes: [UInt8]
        do {
            bytes = try RegionFiles.contents(path: path, limit: 64 * 1024, privateFile: requirePrivate)
        } catch {
            throw JWSError(.badKey, source: path, error.detail)
        }
        let jwk: JWK
        do {
            jwk = try JSONDecoder().decode(JWK.self, from: Data(bytes))
        } catch {
            throw JWSError(.badKey, source: path, "not a JWK (JSON object with kty, crv, x)")
        }
        if requirePrivate { _ = try jwk.privateKey(source: path) } else { _ = try jwk.publicKey(source: path) }
        return jwk
    }

    /// The JWK as sorted-key JSON.
    public func jsonString() throws -> String { try JSONOutput.string(self) }
}
