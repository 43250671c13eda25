import TilePackCore

/// How urgently the system wants memory back.
public enum MemoryPressure: String, Sendable, Codable {
    /// Drop to the low-water mark.
    case warning
    /// Keep only what is leased.
    case critical
}

/// Options of a ``TileStore``.
public struct TileStoreOptions: Sendable {
    /// Which entries go first when room is needed.
    public var policy: EvictionPolicyKind = .lru
    /// A warning leaves at most this share of the budget resident.
    public var lowWaterFraction = 0.5
    /// Idle buffers kept per capacity class.
    public var pooledBuffersPerClass = 8
    /// Test switch: raise memory warnings on a schedule, so every path that uses the store
    /// meets them (`tilepack stress --memory-warnings`, the store's tests).
    package var simulatedWarnings: SimulatedMemoryWarnings?
    /// Asked before every tile is served.
    public var accessPolicy: any AccessPolicy = OpenAccess()

    public init() {}
}

/// A schedule of simulated memory warnings: a test and `tilepack stress` switch, `package`
/// so that an app never sees it (the app raises real ones through
/// ``TileStore/handleMemoryPressure(_:)``).
package enum SimulatedMemoryWarnings: Sendable, Equatable, CustomStringConvertible {
    /// After every N loads.
    case every(Int)
    /// After a load with probability 1/32, from a seeded generator (reproducible).
    case random(seed: UInt64)

    /// Parses `every:N` or `random:SEED`.
    package init(parsing text: String) throws(TileStoreError) {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        if parts.count == 2, parts[0] == "every", let n = Int(parts[1]), n >= 1 {
            self = .every(n)
        } else if parts.count == 2, parts[0] == "random", let seed = UInt64(parts[1]) {
            self = .random(seed: seed)
        } else {
            throw TileStoreError(
                .invalidOptions, subject: "memory warnings '\(text)'",
                detail: "expected every:N (N ≥ 1) or random:SEED")
        }
    }

    package var description: String {
        switch self {
        case .every(let n): "every:\(n)"
        case .random(let seed): "random:\(seed)"
        }
    }
}
