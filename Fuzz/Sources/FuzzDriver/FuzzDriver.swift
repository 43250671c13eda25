#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// libFuzzer's driver (`-sanitize=fuzzer` links it): parses libFuzzer's flags from argv and
/// calls `callback` with each input until a crash, a time limit or a run count ends it.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// Hands one input to `entry`, for a target's `LLVMFuzzerTestOneInput`. A thrown error is a
/// declined input (the entries throw typed errors); a crash — a trap, or an ASan report — is
/// what libFuzzer is looking for. Always returns 0 (libFuzzer's "keep this input if new").
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int, _ entry: ([UInt8]) throws -> Void) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do { try entry(bytes) } catch {}
    return 0
}

/// Runs libFuzzer over `testOneInput` (the target's `LLVMFuzzerTestOneInput`) with the
/// process's arguments and exits with its status. SwiftPM gives an executable target its own
/// `main`, so the driver is started from there rather than by libFuzzer's `main`.
public func runFuzzer(_ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, testOneInput))
}
