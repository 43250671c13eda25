import ArgumentParser
import TilePack

/// `tilepack catalog`: the publisher's side of the region store — a signing key and the
/// signed catalog (`catalog.jws`) a device accepts.
struct CatalogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog",
        abstract: "Make the publisher's key and sign a region library's catalog.",
        discussion: """
            A device whose trust file names a publisher key reads only catalog.jws, the catalog \
            signed with that key; catalog.json alone is unsigned and opens nothing. Keep the \
            private key with the publisher, never in a library. See docs/REGIONS.md.
            """,
        subcommands: [CatalogKeygenCommand.self, CatalogSignCommand.self]
    )
}
