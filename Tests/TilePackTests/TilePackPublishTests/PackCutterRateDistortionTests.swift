import Testing
import TilePackArchive
import TilePackEncoders
@testable import TilePackPublish

/// A pack's re-encoded edge tiles take the λ their master was built with, not the codec's
/// default: a master built without RDO (nothing recorded) must not get RDO blocks at its edges.
@Suite struct PackCutterRateDistortionTests {
    @Test func edgeTilesUseTheMastersRecordedLambda() {
        let key = MBTilesMetadata.Key.buildOptions
        #expect(PackCutter.rateDistortion(ofMaster: [key: #"{"codec":"astc6x6","rdo":"7"}"#]).lambda == 7)
        #expect(PackCutter.rateDistortion(ofMaster: [key: #"{"codec":"astc6x6","rdo":"0"}"#]) == .off)
        #expect(PackCutter.rateDistortion(ofMaster: [key: #"{"codec":"astc6x6"}"#]) == .off, "built before --rdo")
        #expect(PackCutter.rateDistortion(ofMaster: [:]) == .off)
        #expect(PackCutter.rateDistortion(ofMaster: [key: #"{"rdo":"7"}"#]) != .standard)
    }
}
