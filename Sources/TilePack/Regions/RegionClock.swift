#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the region store reads the time: purchase dates, subscription expiry and the
/// rolled-back-clock check all ask this, so tests (and a server answering for another
/// moment) can set it.
public protocol RegionClock: Sendable {
    /// Seconds since 1970-01-01T00:00:00Z.
    func now() -> Double
}

/// The machine's wall clock (which a user can set back: the ledger checks for that).
public struct SystemRegionClock: RegionClock {
    public init() {}
    public func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }
}

/// A clock that says what it was told (tests, replays).
public struct FixedRegionClock: RegionClock {
    public let seconds: Double
    public init(_ seconds: Double) { self.seconds = seconds }
    public func now() -> Double { seconds }
}
