import ArgumentParser
import TilePack

/// `tilepack store list`: the catalog's products with prices and whether they are owned.
struct StoreListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the products of the library's signed catalog.")

    @OptionGroup var options: RegionLibraryOptions

    @Flag(
        help:
            """
            Print one JSON object per product: id, kind, title, price (a string), currency, bounds [west, south, \
            east, north], minzoom, maxzoom, owned, available.
            """
    )
    var json = false

    func run() throws {
        try exitingOnError {
            let library = try options.open(readOnly: true)
            reportProblems(library)
            for p in try library.listings() {
                if json {
                    print(try JSONOutput.string(p))
                } else {
                    let zooms = p.zoomRange.map { "z\($0.lowerBound)–\($0.upperBound)" } ?? "-"
                    let state = p.owned ? "owned" : (p.available ? "for sale" : "unavailable")
                    print("\(p.id)  \(p.kind)  \(p.title)  \(p.price) \(p.currency)  \(zooms)  \(state)")
                }
            }
        }
    }
}
