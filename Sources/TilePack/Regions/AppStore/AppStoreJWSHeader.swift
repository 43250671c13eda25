/// The protected header of App Store signed data: `{"alg":"ES256","x5c":[leaf, intermediate,
/// root],"typ":"JWT"}` (standard base64 DER in `x5c`); StoreKit Testing in Xcode writes one
/// certificate and `kid` `Apple_Xcode_Key`. Unknown members are ignored, as Apple's verifier does.
struct AppStoreJWSHeader: Codable, Sendable {
    var alg: String?
    var x5c: [String]?
    var kid: String?
    var typ: String?
    /// Critical extensions (RFC 7515 §4.1.11): none is understood, so any present is refused.
    var crit: [String]?
}
