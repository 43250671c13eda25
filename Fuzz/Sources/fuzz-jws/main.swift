import FuzzDriver
import TilePack

/// libFuzzer's callback: one input through the entry FuzzCrashReplayTests replays.
@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(data, size, RegionsFuzzEntry.jws)
}

runFuzzer(testOneInput)
