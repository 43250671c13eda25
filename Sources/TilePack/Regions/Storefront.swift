import TilePackCore

/// Where purchases happen: the App Store (an app fills this with StoreKit 2) or the test App
/// Store of `tilepack store` (``TilePackTools``' `TestAppStore`). The store is OUTSIDE the
/// device: everything it returns is a signed JWS that the device verifies against its own
/// ``TrustAnchors`` before believing it, exactly as it verifies tokens read from its ledger.
///
/// The lifecycle is StoreKit's: a purchase is *unfinished* at the store until the device has
/// recorded it and calls ``finish(transactionID:)``; a refund or revocation is an update that
/// is unfinished again until delivered. A device that was killed between paying and
/// recording receives the purchase on its next ``unfinishedTransactions(account:bundleID:)``,
/// so nothing is charged but missing.
///
/// StoreKit 2 mapping (docs/REGIONS.md, "An iOS app"): ``purchase(_:)`` is
/// `Product.purchase(options: [.appAccountToken(account)])` returning
/// `VerificationResult.jwsRepresentation`; ``transactions(account:bundleID:)`` is
/// `Transaction.all`; ``unfinishedTransactions(account:bundleID:)`` is `Transaction.unfinished`
/// and `Transaction.updates`; ``finish(transactionID:)`` is `Transaction.finish()`; refunds
/// happen at Apple (`beginRefundRequest`), so an app's ``refund(transactionID:reason:)``
/// throws.
public protocol Storefront: Sendable {
    /// Buys `request.productID` for `request.account`. An owned non-consumable or an active
    /// subscription is not charged again: the answer is ``PurchaseOutcome/alreadyOwned(_:)``
    /// with the transaction that owns it.
    func purchase(_ request: PurchaseRequest) throws -> PurchaseOutcome

    /// Refunds a transaction; returns the transaction signed again with `revocationDate`.
    func refund(transactionID: String, reason: Int) throws -> String

    /// The latest signed version of every transaction of `account` in the app `bundleID`
    /// (what a restore imports).
    func transactions(account: String, bundleID: String) throws -> [String]

    /// Transactions (purchases and revocations) not yet finished by the device.
    func unfinishedTransactions(account: String, bundleID: String) throws -> [String]

    /// The device has recorded `transactionID`'s latest version: stop redelivering it.
    func finish(transactionID: String) throws

    /// Signed renewal infos of the account's auto-renewable subscriptions.
    func renewalInfos(account: String, bundleID: String) throws -> [String]

    /// The store's current signed version of one transaction of the app `bundleID`, nil when
    /// the store knows no such transaction: Apple's App Store Server API "Get Transaction
    /// Info" (`GET /inApps/v1/transactions/{transactionId}`, its `signedTransactionInfo`).
    /// A seller's server asks it before it delivers what a token bought (`tilepack serve
    /// --packs`), so a refunded buyer's pre-refund copy of the token opens nothing.
    ///
    /// The answer is a JWS the caller verifies with its own trust anchors, like every other
    /// answer of the store. A device's storefront (StoreKit) has no such call: the default
    /// implementation throws, and a server without it refuses paid deliveries (never opens them).
    func currentTransaction(id: String, bundleID: String) throws -> String?
}

extension Storefront {
    /// Throws: this storefront cannot look a transaction up (a device's StoreKit storefront).
    public func currentTransaction(id: String, bundleID: String) throws -> String? {
        throw LedgerError(
            .store, subject: "storefront",
            "this store cannot look up a transaction (the App Store Server API's Get Transaction Info)")
    }
}

/// What a device asks the store for.
public struct PurchaseRequest: Sendable, Equatable {
    public var productID: String
    /// The product's kind in the publisher's signed catalog, as the App Store knows it.
    public var type: AppStoreProductType
    /// The app asking (``TrustAnchors/bundleID``).
    public var bundleID: String
    /// StoreKit's `appAccountToken`: who is buying.
    public var account: String
    /// Subscriptions: the term, from the catalog.
    public var period: SubscriptionPeriod?

    public init(
        productID: String, type: AppStoreProductType, bundleID: String, account: String,
        period: SubscriptionPeriod? = nil
    ) {
        self.productID = productID
        self.type = type
        self.bundleID = bundleID
        self.account = account
        self.period = period
    }
}

/// The store's answer to a purchase: a signed transaction either way.
public enum PurchaseOutcome: Sendable, Equatable {
    /// Charged: a new transaction, unfinished until the device calls `finish`.
    case purchased(String)
    /// Nothing charged: the account already owns the product (this transaction).
    case alreadyOwned(String)

    public var jws: String {
        switch self {
        case .purchased(let jws), .alreadyOwned(let jws): jws
        }
    }
}

/// StoreKit's `appAccountToken` is a UUID: a fresh one, lowercase, for a new account.
public enum AccountToken {
    /// A random version-4 UUID in its canonical lowercase spelling.
    public static func random() -> String {
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = bytes.map { b in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(b >> 4)], digits[Int(b & 0xF)]])
        }
        return hex[0..<4].joined() + "-" + hex[4..<6].joined() + "-" + hex[6..<8].joined() + "-"
            + hex[8..<10].joined() + "-" + hex[10..<16].joined()
    }

    /// Why `value` is not an acceptable account token (1–128 printable ASCII characters;
    /// StoreKit's are UUIDs, earlier tilepack ledgers used `acct-…`), or nil.
    public static func problem(_ value: String) -> String? {
        if value.isEmpty { return "is empty" }
        if value.utf8.count > 128 { return "is longer than 128 bytes" }
        if value.utf8.contains(where: { $0 < 0x21 || $0 > 0x7E }) {
            return "\(ErrorText.quoted(value)) has characters outside printable ASCII"
        }
        return nil
    }
}
