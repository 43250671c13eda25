import ArgumentParser
import TilePack

/// Where a region library and this device's purchases live; shared by `store …` and `query`.
struct RegionLibraryOptions: ParsableArguments {
    @Option(help: "Region library directory: the .mbtiles archives and catalog.json (default: the current directory).")
    var library: String?

    @Option(help: "Entitlement ledger (SQLite) of this device (default: $XDG_DATA_HOME/tilepack/ledger.sqlite, else ~/.local/share/tilepack/ledger.sqlite).")
    var ledger: String?

    @Option(help: "Directory of the local store simulator: its signing key and records (default: $XDG_DATA_HOME/tilepack/simulator).")
    var simulator: String?

    /// Opens the library at `directory` (default: --library, else the current directory).
    func open(directory: String? = nil) throws(CatalogError) -> RegionLibrary {
        try RegionLibrary(directory: directory ?? library ?? ".", ledgerPath: ledger, simulatorDirectory: simulator)
    }
}

/// Runs `body`, printing a `TilePackError` as one line and exiting with its category's status.
func exitingOnError(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as any TilePackError {
        printError(error.description)
        throw ExitCode(error.category.exitStatus)
    }
}
