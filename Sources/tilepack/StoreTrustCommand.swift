import ArgumentParser
import TilePack
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `tilepack store trust`: a Sandbox trust file pinning the test App Store's root.
struct StoreTrustCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trust",
        abstract: "Write a Sandbox trust file that pins the test App Store's root certificate.",
        discussion: """
            The trust file is what a device trusts: the App Store root (here DIR/AppStoreRoot.der, \
            published by the test App Store; copied into the file as base64), the app's bundle id, \
            the accepted environments (Sandbox) and the publisher's public catalog keys. Nothing \
            else in the simulator's directory is read, and no private key is ever written to it.
            """)

    @Option(
        help: "Directory of the test App Store (created when missing): its published root certificate AppStoreRoot.der."
    )
    var simulator: String

    @Option(help: "The publisher's public JWK (Ed25519) that signs the catalog; repeat for several.")
    var publisher: [String] = []

    @Option(help: "The app's bundle identifier, which every transaction must name.")
    var bundleId: String

    @Option(
        name: .shortAndLong,
        help: "Trust file to write (default: $XDG_CONFIG_HOME/tilepack/trust.json, else ~/.config/tilepack/trust.json)."
    )
    var output: String?

    @Flag(help: "Replace an existing trust file.")
    var force = false

    func validate() throws {
        if let problem = TrustAnchors.bundleIDProblem(bundleId) { throw ValidationError("--bundle-id: \(problem)") }
    }

    func run() throws {
        try exitingOnError {
            let out = try TrustFileOption.resolve(output)
            // Opening the test App Store creates its CA on first use; its published root is
            // all a device takes from it.
            let ca = try TestAppStore(directory: simulator).ca
            let root = ca.rootCertificateDER, rootPath = ca.rootCertificatePath
            var keys: [JWK] = []
            for path in publisher {
                let key = try JWK.read(path: path)
                guard key.d == nil else {
                    throw InputFileError(
                        path: path,
                        detail:
                            """
                            holds a private key (d); give the publisher's public JWK: a trust file holds no \
                            private key
                            """
                    )
                }
                keys.append(key)
            }
            let anchors = TrustAnchors(
                appStoreRoots: [root], bundleID: bundleId, environments: [.sandbox], publisherKeys: keys)
            let text = try anchors.jsonString() + "\n"
            if let slash = out.lastIndex(of: "/"), slash != out.startIndex {
                try RegionFiles.makeDirectories(String(out[..<slash]))
            }
            if force {
                try RegionFiles.writeAtomically(path: out, bytes: Array(text.utf8), mode: 0o644)
            } else if try !RegionFiles.createExclusively(path: out, bytes: Array(text.utf8), mode: 0o644) {
                throw TrustFileError(path: out, "exists; pass --force to replace it", category: .invalidArgument)
            }
            // Read back through the device's own parser: the file written is one it accepts.
            _ = try TrustAnchors(contentsOf: out)
            let fingerprint = try FileDigest.sha256(path: rootPath)
            print(
                """
                wrote \(out): Sandbox, bundle \(bundleId), root \(rootPath) (SHA-256 \(fingerprint)), \
                \(keys.count) publisher key\(keys.count == 1 ? "" : "s")
                """
            )
        }
    }
}
