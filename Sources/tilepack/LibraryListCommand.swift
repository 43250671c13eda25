import ArgumentParser
import TilePack

/// `tilepack library list`: installed packs with version, size and whether the account owns them.
struct LibraryListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the installed packs: id, version, bytes, product, whether this account owns it.",
        discussion: """
            A pack is owned when it shows: it is the free pack, the ledger's verified transactions \
            entitle its product (directly, through a bundle or a subscription), or a lapsed \
            subscription released it before it ended. A pack whose manifest does not verify, or \
            whose tile index is not the signed one, is listed with the problem and is never owned.
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
            let shown = Set(library.installedPacks.map(\.manifest.packID))
            for pack in try InstalledPacks(library: library.directory, trust: trust).list() {
                let line = Self.line(for: pack, open: shown.contains(pack.packID) && library.isPackOpen(pack.packID),
                                     refused: library.packProblems.first { $0.contains(pack.packID) })
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

    /// One installed pack's line: owned when it verifies and the library shows it (`open`);
    /// `refused` is why the library does not show it.
    /// A function of its own, not inlined into `run`'s closure: there Swift 6.3.1's optimizer
    /// crashes on the reads of `pack.manifest` (CopyPropagation's ownership verifier, `-c release`).
    @inline(never)
    static func line(for pack: InstalledPack, open: Bool, refused: String?) -> Line {
        guard let manifest = pack.manifest else {
            return Line(packID: pack.packID, version: nil, bytes: pack.bytes, productID: nil, owned: false, problem: pack.problem)
        }
        let problem = pack.problem ?? refused
        return Line(packID: pack.packID, version: manifest.version, bytes: pack.bytes, productID: manifest.productID,
                    owned: problem == nil && open, problem: problem)
    }
}
