import TilePackCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One pack a server offers (`GET /packs`), after its manifest's publisher signature was
/// checked: what an app shows before anything is downloaded ("Chamonix valley, 38.2 MB").
public struct ListedPack: Sendable, Equatable {
    /// The verified manifest (the signed payload, never the unsigned JSON beside it).
    public var manifest: PackManifest
    /// The manifest as signed: what the installer writes as `<pack_id>.manifest.jws`.
    public var jws: String
    /// The pack's path on the server (`/packs/<id>`).
    public var path: String
    /// The deltas the server keeps towards this version, by the version they start from.
    public var deltas: [Delta]

    /// `<pack_id>.v<from>-v<to>.delta.mbtiles` on the server. Its size is the server's word
    /// (unsigned): it only chooses between a delta chain and a full download, and a delta
    /// that is not what it claims fails its signed tile-index check when applied.
    public struct Delta: Sendable, Equatable, Codable {
        public var from: Int
        public var url: String
        public var bytes: Int64
    }

    public var packID: String { manifest.packID }
    public var version: Int { manifest.version }
}

/// What `GET /packs` listed: the packs whose manifests verified, and why the others were refused.
public struct PackListing: Sendable {
    public var packs: [ListedPack]
    /// One per refused entry (a bad signature, unsigned fields that disagree with the signed
    /// manifest, a path off the server): shown, never installed.
    public var refused: [Refused]

    /// A refused entry: the pack id its unsigned fields claim (nil when unreadable) and why.
    public struct Refused: Sendable {
        public var claimedPackID: String?
        public var error: PackError
    }

    public func pack(_ packID: String) -> ListedPack? { packs.first { $0.packID == packID } }

    /// The largest listing accepted: a few hundred packs are far below it.
    public static let maxBytes = 4 << 20

    /// Parses and verifies a `GET /packs` body: `{"packs": [{manifest fields…, "manifest": JWS,
    /// "url": "/packs/<id>", "deltas": [{"from", "url", "bytes"}]}]}`.
    /// - Throws: ``PackError`` (`network`) when the body is not such a document.
    /// - Cost: one Ed25519 verification and two JSON decodes per entry.
    public static func parse(_ body: [UInt8], publisherKeys: [JWK], source: String) throws -> PackListing {
        let document: Document
        do { document = try JSONDecoder().decode(Document.self, from: Data(body)) } catch {
            throw PackError(.network, subject: source, "is not a pack listing: \(error)")
        }
        var listing = PackListing(packs: [], refused: [])
        var seen: Set<String> = []
        for (index, slot) in document.packs.enumerated() {
            let subject = "\(source) packs[\(index)]"
            do throws(PackError) {
                let entry: Entry
                switch slot.entry {
                case .success(let decoded): entry = decoded
                case .failure(let error):
                    throw PackError(.invalidManifest, subject: subject, "is not a pack entry: \(error)")
                }
                let manifest = try PackError.typed({
                    try SignedPackManifest.verify(entry.manifest, publisherKeys: publisherKeys, source: subject)
                }) { PackError(.badSignature, subject: subject, "\($0)") }
                // The fields beside the JWS are for people and scripts; a server (or a proxy)
                // that edits them must not make the app show one size and install another.
                guard entry.fields == manifest else {
                    throw PackError(
                        .badSignature, subject: subject,
                        "the listed fields of \(manifest.packID) disagree with its signed manifest")
                }
                try checkPath(entry.url, subject: subject)
                for delta in entry.deltas ?? [] {
                    try checkPath(delta.url, subject: subject)
                    guard delta.from >= 1, delta.from < manifest.version, delta.bytes > 0 else {
                        throw PackError(
                            .invalidManifest, subject: subject,
                            "delta from \(delta.from) to \(manifest.version) of \(delta.bytes) bytes is not a delta")
                    }
                }
                guard seen.insert(manifest.packID).inserted else {
                    throw PackError(.invalidManifest, subject: subject, "pack \(manifest.packID) is listed twice")
                }
                listing.packs.append(
                    ListedPack(manifest: manifest, jws: entry.manifest, path: entry.url, deltas: entry.deltas ?? []))
            } catch {
                let claimed: String? =
                    if case .success(let entry) = slot.entry { entry.fields.packID } else { slot.claimedPackID }
                listing.refused.append(Refused(claimedPackID: claimed, error: error))
            }
        }
        return listing
    }

    /// A pack's or delta's address must be a path on the server that listed it: the transaction
    /// the device presents goes there, and never to a host a listing names.
    static func checkPath(_ path: String, subject: String) throws(PackError) {
        guard path.hasPrefix("/"), !path.hasPrefix("//"), path.utf8.count <= 1024,
            path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != 0x5c && $0 != 0x23 && $0 != 0x3f }),
            !path.split(separator: "/").contains("..")
        else {
            throw PackError(
                .invalidManifest, subject: subject,
                "url \(ErrorText.quoted(String(path.prefix(80)))) is not a path on this server")
        }
    }

    private struct Document: Decodable {
        var packs: [Slot]
    }

    /// One entry or why it does not decode: a malformed entry is refused alone.
    private struct Slot: Decodable {
        var entry: Result<Entry, any Error>
        var claimedPackID: String?
        enum CodingKeys: String, CodingKey { case packID = "pack_id" }
        init(from decoder: any Decoder) throws {
            do { entry = .success(try Entry(from: decoder)) } catch { entry = .failure(error) }
            claimedPackID = try? decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .packID)
        }
    }

    /// An entry decoded twice from one object: the manifest fields (the unsigned copy) and the
    /// delivery fields.
    private struct Entry: Decodable {
        var fields: PackManifest
        var manifest: String
        var url: String
        var deltas: [ListedPack.Delta]?

        enum CodingKeys: String, CodingKey { case manifest, url, deltas }

        init(from decoder: any Decoder) throws {
            fields = try PackManifest(from: decoder)
            let c = try decoder.container(keyedBy: CodingKeys.self)
            manifest = try c.decode(String.self, forKey: .manifest)
            url = try c.decode(String.self, forKey: .url)
            deltas = try c.decodeIfPresent([ListedPack.Delta].self, forKey: .deltas)
        }
    }
}
