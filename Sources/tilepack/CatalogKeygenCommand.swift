import ArgumentParser
import TilePack

/// `tilepack catalog keygen -o publisher.jwk`: a new Ed25519 publisher key.
struct CatalogKeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Write a new Ed25519 publisher key (private JWK, mode 0600) and print its public JWK.",
        discussion: """
            The public JWK (one line on stdout, with its RFC 7638 thumbprint as kid) goes into \
            the trust file's publisher_keys; the private file stays with the publisher.
            """)

    @Option(name: .shortAndLong, help: "Where to write the private JWK.")
    var output: String

    @Flag(help: "Replace an existing file.")
    var force = false

    func run() throws {
        try exitingOnError {
            try OutputPath.checkDirectory(of: output)
            let jwk = JWK.newPrivateKey()
            let bytes = Array((try jwk.jsonString() + "\n").utf8)
            if force {
                try RegionFiles.writeAtomically(path: output, bytes: bytes, mode: 0o600)
            } else if try !RegionFiles.createExclusively(path: output, bytes: bytes, mode: 0o600) {
                throw InputFileError(path: output, detail: "already exists (pass --force to replace it)")
            }
            print(try jwk.publicJWK.jsonString())
        }
    }
}
