import ArgumentParser
import TilePack

/// `tilepack store buy PRODUCT`: a purchase signed by the store and recorded in the ledger.
struct StoreBuyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "buy", abstract: "Buy a product: the store signs a transaction and the ledger records it.")

    @Argument(help: "Product id from `tilepack store list`.")
    var product: String

    @OptionGroup var options: RegionLibraryOptions

    @Flag(help: "Print the entitlement as JSON: product_id, transaction_id, original_transaction_id, purchase_date, expires_date.")
    var json = false

    func run() throws {
        try exitingOnError {
            let entitlement = try options.open().buy(product)
            if json {
                print(try JSONOutput.string(entitlement))
            } else {
                print("bought \(entitlement.productID): transaction \(entitlement.transactionID)")
            }
        }
    }
}
