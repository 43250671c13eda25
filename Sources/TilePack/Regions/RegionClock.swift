#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where the region store reads the time: purchase dates, subscription expiry and the
/// rolled-back-clock check all ask this, so tests (and a server answering for another
/// moment) can set it.
public protocol RegionClock: Sendable {
    /// The current instant.
    func now() -> Date
}

/// The machine's wall clock (which a user can set back: the ledger checks for that).
public struct SystemRegionClock: RegionClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// A clock that says what it was told (tests, replays).
public struct FixedRegionClock: RegionClock {
    public let date: Date
    public init(_ date: Date) { self.date = date }
    public func now() -> Date { date }
}
