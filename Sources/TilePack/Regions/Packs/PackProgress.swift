/// Where a pack download stands: what the CLI's bar and an app's progress view show.
public struct PackProgress: Sendable, Equatable {
    public enum Phase: String, Sendable, Equatable {
        /// Bytes are arriving.
        case downloading
        /// The whole file is being hashed (SHA-256) against the signed manifest.
        case verifying
        /// A delta is being applied to a copy of the installed version.
        case applying
        /// Installed.
        case done
    }

    public var packID: String
    public var phase: Phase
    /// What this transfer fetches: `<pack>.mbtiles` or a delta's name.
    public var file: String
    /// Bytes of `file` on disk so far (what was resumed plus what arrived).
    public var bytesReceived: Int64
    /// The size of `file`.
    public var totalBytes: Int64
    /// Bytes that were already in the `.part` when this transfer started.
    public var resumedFrom: Int64
    /// Bytes per second over the last few seconds (0 before there is a measurement).
    public var bytesPerSecond: Double
    /// Time left at that rate; nil while the rate is unknown.
    public var timeRemaining: Duration?

    public init(
        packID: String, phase: Phase, file: String, bytesReceived: Int64, totalBytes: Int64, resumedFrom: Int64,
        bytesPerSecond: Double, timeRemaining: Duration?
    ) {
        self.packID = packID; self.phase = phase; self.file = file; self.bytesReceived = bytesReceived
        self.totalBytes = totalBytes; self.resumedFrom = resumedFrom; self.bytesPerSecond = bytesPerSecond
        self.timeRemaining = timeRemaining
    }

    /// 0…1.
    public var fraction: Double { totalBytes > 0 ? min(1, Double(bytesReceived) / Double(totalBytes)) : 0 }
}

/// The rate of a transfer over a sliding window, so a stall shows as a falling rate within
/// seconds rather than being averaged away over the whole download.
///
/// Cost: O(1) amortized per sample; at most one sample per ``minimumSpacing`` is kept.
struct TransferRate {
    static let window: Duration = .seconds(5)
    static let minimumSpacing: Duration = .milliseconds(100)

    private var samples: [(at: ContinuousClock.Instant, bytes: Int64)] = []

    /// Records that `bytes` (a running total) had arrived at `now`.
    mutating func record(_ bytes: Int64, at now: ContinuousClock.Instant) {
        if let last = samples.last, now - last.at < Self.minimumSpacing, samples.count > 1 {
            samples[samples.count - 1] = (now, bytes)
        } else {
            samples.append((now, bytes))
        }
        while let first = samples.first, samples.count > 2, now - first.at > Self.window { samples.removeFirst() }
    }

    /// Bytes per second across the window; 0 with less than 100 ms of samples.
    var bytesPerSecond: Double {
        guard let first = samples.first, let last = samples.last else { return 0 }
        let span = last.at - first.at
        guard span >= Self.minimumSpacing else { return 0 }
        let seconds = Double(span.components.seconds) + Double(span.components.attoseconds) / 1e18
        return Double(last.bytes - first.bytes) / seconds
    }
}
