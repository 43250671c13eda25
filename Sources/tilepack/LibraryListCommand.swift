import ArgumentParser
import TilePack

/// `tilepack library list`: installed packs with version, size and whether the account owns them.
struct LibraryListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the installed packs: id, version, bytes, product, whether this account owns it.",
        discussion: """
            A pack is owned when it is the free pack or the ledger's verified transactions entitle \
            its product (directly, through a bundle or a subscription). A pack whose manifest does \
            not verify is listed with the problem and is never owned.
            """)

    @OptionGroup var options: RegionLibraryOptions

    @Flag(help: "Print one JSON object per pack: pack_id, version, bytes, product_id, owned, problem.")
    var json = false

    struct Line: Encodable {
        let packID: String, version: Int?, bytes: Int64, productID: String?, owned: Bool, problem: String?
        enum CodingKeys: String, CodingKey {
            case packID = "pack_id", version, bytes, productID = "product_id", owned, problem
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(packID, forKey: .packID)
            try c.encodeOrNull(version, forKey: .version)
            try c.encode(bytes, forKey: .bytes)
            try c.encodeOrNull(productID, forKey: .productID)
            try c.encode(owned, forKey: .owned)
            try c.encodeOrNull(problem, forKey: .problem)
        }
    }

    func run() throws {
        try exitingOnError {
            let library = try options.open(readOnly: true)
            reportProblems(library)
            guard let trust = library.trust else {
                throw PackError(.invalidInput, subject: library.directory, "an open library (no trust anchors) has no packs: pass --trust FILE")
            }
            let entitled = library.catalog.map { catalog in
                catalog.entitlementClosure(of: library.entitlements?.entitledProductIDs() ?? [])
            } ?? []
            for pack in try InstalledPacks(library: library.directory, trust: trust).list() {
                let line = Self.line(for: pack, entitled: entitled)
                if json {
                    print(try JSONOutput.string(line))
                } else {
                    let version = line.version.map { "v\($0)" } ?? "v?"
                    let state = line.problem.map { "damaged: \($0)" } ?? (line.owned ? "owned" : "not owned")
                    print("\(line.packID)  \(version)  \(line.bytes) bytes  \(state)")
                }
            }
        }
    }

    /// One installed pack's line: owned when it verifies and is free or its product is in `entitled`.
    /// A function of its own, not inlined into `run`'s closure: there Swift 6.3.1's optimizer
    /// crashes on the reads of `pack.manifest` (CopyPropagation's ownership verifier, `-c release`).
    @inline(never)
    static func line(for pack: InstalledPack, entitled: Set<String>) -> Line {
        guard let manifest = pack.manifest else {
            return Line(packID: pack.packID, version: nil, bytes: pack.bytes, productID: nil, owned: false, problem: pack.problem)
        }
        let owned = pack.problem == nil && (manifest.productID.map { entitled.contains($0) } ?? true)
        return Line(packID: pack.packID, version: manifest.version, bytes: pack.bytes, productID: manifest.productID,
                    owned: owned, problem: pack.problem)
    }
}
