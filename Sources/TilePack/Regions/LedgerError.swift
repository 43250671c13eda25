import TilePackCore
import TilePackSQLite

/// A failure of the entitlement ledger or the store simulator: one line naming the file (or
/// argument) and the problem; ``kind`` for matching, ``category`` for exit statuses.
public struct LedgerError: TilePackError, Equatable {
    public enum Kind: String, Sendable, Equatable {
        /// An argument (product id, account, period, transaction id) is not acceptable.
        case invalidArgument
        /// A transaction id the store does not know.
        case notFound
        /// A signed transaction was refused (``verification`` says why).
        case rejected
        /// The SQLite file or a key file failed (locked, full, damaged, unreadable).
        case storage
        /// A ledger written by an earlier tilepack (Ed25519-signed transactions): refused
        /// until `tilepack store restore` re-imports its purchases in the App Store format.
        case legacyLedger
        /// The store cannot be reached or refused the request.
        case store
    }

    public var kind: Kind
    /// The file or argument the problem is about.
    public var subject: String
    /// The problem, without the subject.
    public var detail: String
    /// For ``Kind/rejected``: why the signed transaction was refused.
    public var verification: AppStoreVerificationError.Reason?
    /// For ``Kind/storage``: the category of the underlying error.
    public var storageCategory: TilePackErrorCategory?

    public init(
        _ kind: Kind, subject: String, _ detail: String, verification: AppStoreVerificationError.Reason? = nil,
        storageCategory: TilePackErrorCategory? = nil
    ) {
        self.kind = kind
        self.subject = subject
        self.detail = detail
        self.verification = verification
        self.storageCategory = storageCategory
    }

    /// A refused signed transaction: the verifier's own line (it names its source).
    public init(_ error: AppStoreVerificationError) {
        self.init(
            .rejected, subject: error.source, "\(error.reason.rawValue): \(error.detail)", verification: error.reason)
    }

    public var category: TilePackErrorCategory {
        switch kind {
        case .invalidArgument: .invalidArgument
        case .notFound: .notFound
        case .rejected, .legacyLedger: .invalidInput
        case .store: .environment
        case .storage: storageCategory ?? .environment
        }
    }

    public var description: String { "\(subject): \(ErrorText.oneLine(detail))" }

    /// Runs `body`, turning SQLite, JWS and file errors into ledger errors about `path`.
    package static func mapping<T>(path: String, doing: String, _ body: () throws -> T) throws(LedgerError) -> T {
        do {
            return try body()
        } catch let error as LedgerError {
            throw error
        } catch let error as AppStoreVerificationError {
            throw LedgerError(error)
        } catch let error as SQLiteError {
            throw LedgerError(
                .storage, subject: path, "\(doing): SQLite error \(error.code.rawValue) (\(error.message))",
                storageCategory: error.category)
        } catch let error as InputFileError {
            throw LedgerError(.storage, subject: error.path, error.problem, storageCategory: .environment)
        } catch {
            throw LedgerError(.storage, subject: path, "\(doing): \(error)")
        }
    }
}
