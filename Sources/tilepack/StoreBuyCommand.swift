import ArgumentParser
import TilePack

/// `tilepack store buy PRODUCT`: a purchase signed by the store and recorded in the ledger.
struct StoreBuyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "buy",
        abstract: "Buy a product: the test App Store signs a transaction and the ledger records it.",
        discussion: """
            An owned non-consumable or active subscription is not bought again ("already owned", \
            nothing charged, exit 0). The purchase stays unfinished at the store until the ledger \
            has recorded it: a buy killed halfway is delivered by the next command or store restore.
            """)

    @Argument(help: "Product id from `tilepack store list`.")
    var product: String

    @OptionGroup var options: RegionLibraryOptions

    @Flag(
        help:
            """
            Print the result as JSON: product_id, already_owned, and for a purchase type, transaction_id, \
            original_transaction_id, purchase_date, expires_date.
            """
    )
    var json = false

    func run() throws {
        try exitingOnError {
            let library = try options.open(readOnly: false)
            announceDrawnAccount(library)
            switch try library.buy(product) {
            case .bought(let entitlement):
                if json {
                    print(try JSONOutput.string(BuyReport(entitlement: entitlement, productID: entitlement.productID)))
                } else {
                    print("bought \(entitlement.productID): transaction \(entitlement.transactionID)")
                }
            case .alreadyOwned(let id):
                if json {
                    print(try JSONOutput.string(BuyReport(entitlement: nil, productID: id)))
                } else {
                    print("already owned: \(id) (nothing charged)")
                }
            }
        }
    }
}

/// `store buy --json`: the entitlement's fields and `already_owned`.
struct BuyReport: Encodable {
    let entitlement: Entitlement?
    let productID: String

    enum CodingKeys: String, CodingKey { case productID = "product_id", alreadyOwned = "already_owned" }

    func encode(to encoder: any Encoder) throws {
        try entitlement?.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(productID, forKey: .productID)
        try c.encode(entitlement == nil, forKey: .alreadyOwned)
    }
}
