import ArgumentParser
import TilePack
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `tilepack store verify TOKEN_FILE`: App Store signed data checked as a device checks it,
/// against the trust file only.
struct StoreVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract:
            "Verify App Store signed data (a transaction, renewal info or notification JWS) against a trust file.",
        discussion: """
            Checks as Apple's SignedDataVerifier does offline: three base64url parts, alg ES256, an \
            x5c of three certificates whose leaf and intermediate chain to a root pinned in the \
            trust file (never the token's own) with Apple's OIDs, valid at the payload's signedDate; \
            the ES256 signature; then bundleId, appAppleId (notifications) and the environment. A \
            transaction is then checked against the system clock: refunded (revoked) or past its \
            expiresDate (expired). Valid: exit 0. Not valid: exit 2 and one line on stderr, \
            `error: FILE: REASON: detail`, REASON one of malformed, chain, signature, bundle, app_id, \
            environment, expired, revoked.
            """)

    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case transaction
        case renewalInfo = "renewal-info"
        case notification
    }

    @Argument(help: "File holding one compact JWS (whitespace around it is ignored).")
    var tokenFile: String

    @Option(help: "Trust file (default: $XDG_CONFIG_HOME/tilepack/trust.json, else ~/.config/tilepack/trust.json).")
    var trust: String?

    @Option(help: "What the token is: transaction, renewal-info or notification.")
    var kind: Kind = .transaction

    @Flag(
        help: """
            Print the verdict as JSON on stdout: {"valid": true, "kind", "environment", "payload": {Apple's field names}} \
            or {"valid": false, "reason", "detail"} (still exit 2).
            """)
    var json = false

    func run() throws {
        try exitingOnError {
            let anchors = try TrustAnchors(contentsOf: try TrustFileOption.resolve(trust))
            let token = try TokenFile.read(tokenFile)
            let verifier = AppStoreVerifier(anchors: anchors)
            do {
                try report(token: token, verifier: verifier)
            } catch let error as AppStoreVerificationError {
                if json {
                    print(try JSONOutput.string(Rejected(reason: error.code.rawValue, detail: error.explanation)))
                }
                throw error
            }
        }
    }

    private func report(token: String, verifier: AppStoreVerifier) throws {
        switch kind {
        case .transaction:
            let transaction = try verifier.verifyTransaction(token, source: tokenFile)
            let now = Date()
            switch transaction.problem(at: now) {
            case .revoked:
                throw AppStoreVerificationError(
                    .revoked, source: tokenFile,
                    """
                    transaction \(transaction.transactionId ?? "?") was revoked at \
                    \(transaction.revocationDate?.appStoreMilliseconds ?? 0) (ms since 1970)
                    """
                )
            case .expired:
                throw AppStoreVerificationError(
                    .expired, source: tokenFile,
                    """
                    transaction \(transaction.transactionId ?? "?") expired at \
                    \(transaction.expiresDate?.appStoreMilliseconds ?? 0) (ms since 1970)
                    """
                )
            default: break
            }
            output(
                transaction, environment: transaction.environment,
                summary: "transaction \(transaction.transactionId ?? "?"), product \(transaction.productId ?? "?")")
        case .renewalInfo:
            let info = try verifier.verifyRenewalInfo(token, source: tokenFile)
            output(
                info, environment: info.environment,
                summary:
                    "renewal info of \(info.originalTransactionId ?? "?"), renews to \(info.autoRenewProductId ?? "?")")
        case .notification:
            let notification = try verifier.verifyNotification(token, source: tokenFile)
            output(
                notification, environment: notification.appIdentity.environment,
                summary:
                    "notification \(notification.notificationType ?? "?")\(notification.subtype.map { "/" + $0 } ?? "")"
            )
        }
    }

    private func output(_ payload: some Encodable, environment: AppStoreEnvironment?, summary: String) {
        if json {
            let text =
                (try? JSONOutput.string(
                    Accepted(kind: kind.rawValue, environment: environment?.rawValue, payload: payload)))
            print(text ?? #"{"valid": true}"#)
        } else {
            print("valid: \(summary), environment \(environment?.rawValue ?? "?")")
        }
    }

    private struct Accepted<Payload: Encodable>: Encodable {
        var valid = true
        var kind: String
        var environment: String?
        var payload: Payload
    }

    private struct Rejected: Encodable {
        var valid = false
        var reason: String
        var detail: String
    }
}

/// `--trust`: the option, else ``TrustAnchors/defaultPath(environment:)``.
enum TrustFileOption {
    static func resolve(_ option: String?) throws(TrustFileError) -> String {
        if let option { return option }
        guard let path = TrustAnchors.defaultPath(environment: ProcessInfo.processInfo.environment) else {
            throw TrustFileError(
                path: "--trust", "no trust file given and neither XDG_CONFIG_HOME nor HOME is set",
                category: .invalidArgument)
        }
        return path
    }
}

/// A file holding one compact JWS.
enum TokenFile {
    static func read(_ path: String) throws -> String {
        let bytes = try RegionFiles.contents(path: path, limit: AppStoreVerifier.maxCompactLength + 4096)
        return String(String(decoding: bytes, as: UTF8.self).trimmingWhitespace())
    }
}
