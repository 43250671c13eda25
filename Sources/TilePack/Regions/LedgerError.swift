import TilePackCore
import TilePackSQLite

/// A failure of the entitlement ledger or the store simulator: `subject` names the file (or
/// argument), `detail` the problem, `code` is for matching and ``category`` for exit statuses;
/// `cause` is the SQLite, verification or file error underneath, when there was one.
public struct LedgerError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`;
    /// `rawValue` is the stable word scripts and JSON see.
    public struct Code: TilePackErrorCode, RawRepresentable, Codable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        /// An argument (product id, account, period, transaction id) is not acceptable.
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// A transaction id the store does not know.
        public static let notFound = Code(rawValue: "notFound")
        /// A signed transaction was refused (``verification`` says why).
        public static let rejected = Code(rawValue: "rejected")
        /// The SQLite file or a key file failed (locked, full, damaged, unreadable).
        public static let storage = Code(rawValue: "storage")
        /// A ledger written by an earlier tilepack (Ed25519-signed transactions): refused
        /// until `tilepack store restore` re-imports its purchases in the App Store format.
        public static let legacyLedger = Code(rawValue: "legacyLedger")
        /// The store cannot be reached or refused the request.
        public static let store = Code(rawValue: "store")
    }

    public let code: Code
    /// The file or argument the problem is about.
    public let subject: String
    /// The problem, without the subject, on one line.
    public let detail: String
    /// The error underneath, if any; not compared by `==`.
    public let cause: (any Error)?
    /// For ``Code/rejected``: why the signed transaction was refused.
    public let verification: AppStoreVerificationError.Reason?
    /// For ``Code/storage``: the category of the underlying error.
    public let storageCategory: TilePackErrorCategory?

    public init(
        _ code: Code, subject: String, _ detail: String, verification: AppStoreVerificationError.Reason? = nil,
        storageCategory: TilePackErrorCategory? = nil, cause: (any Error)? = nil
    ) {
        self.code = code
        self.subject = subject
        self.detail = ErrorText.oneLine(detail)
        self.verification = verification
        self.storageCategory = storageCategory
        self.cause = cause
    }

    /// A refused signed transaction: the verifier's own line (it names its source).
    public init(_ error: AppStoreVerificationError) {
        self.init(.rejected, subject: error.subject, error.detail, verification: error.code, cause: error)
    }

    public var category: TilePackErrorCategory {
        switch code {
        case .invalidArgument: .invalidArgument
        case .notFound: .notFound
        case .store: .environment
        case .storage: storageCategory ?? .environment
        default: .invalidInput
        }
    }

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
                storageCategory: error.category, cause: error)
        } catch let error as InputFileError {
            throw LedgerError(
                .storage, subject: error.subject, error.detail, storageCategory: .environment, cause: error)
        } catch {
            throw LedgerError(.storage, subject: path, "\(doing): \(error)", cause: error)
        }
    }
}
