import TilePackArchive

/// The pack format this runtime reads: a manifest whose `min_reader_version` is higher is
/// refused with one line instead of being installed.
public enum PackInstall {
    /// ``PackSchema/readerVersion``: the pack reader that opens what is installed.
    public static let readerVersion = PackSchema.readerVersion
}

/// What ``RegionInstaller/install(_:progress:)`` or ``RegionInstaller/update(_:progress:)`` did.
/// JSON (`tilepack download --json`): `pack_id`, `version`, `mode` (`full`, `delta`,
/// `up-to-date`), `bytes_received`, `bytes_total`, `resumed_from`, `sha256`, `reason`.
public struct PackInstallResult: Sendable, Equatable, Encodable {
    public enum Mode: String, Sendable, Equatable, Encodable {
        case full, delta
        case upToDate = "up-to-date"
    }

    public var packID: String
    public var version: Int
    public var mode: Mode
    /// Bytes that came over the network in this run (not what a `.part` held already).
    public var bytesReceived: Int64
    /// Bytes the chosen transfer fetches in all: the pack's size, or the deltas' sum.
    public var bytesTotal: Int64
    /// Bytes a `.part` held when the transfer resumed (0: from scratch).
    public var resumedFrom: Int64
    /// The signed manifest's SHA-256 of the pack file.
    public var sha256: String
    /// Why this mode: `full: not installed`, `full: format changed`, `delta: 2 steps`, …
    public var reason: String

    enum CodingKeys: String, CodingKey {
        case packID = "pack_id", version, mode, bytesReceived = "bytes_received", bytesTotal = "bytes_total"
        case resumedFrom = "resumed_from", sha256, reason
    }
}

/// How an installed pack would reach the server's version.
public enum PackUpdatePlan: Sendable, Equatable {
    /// The whole pack; `reason` starts with `full:` (`full: not installed`, `full: format changed`, …).
    case full(reason: String, bytes: Int64)
    /// A chain of deltas, version N → N+1 → … → M, smaller in sum than the pack.
    case deltas([ListedPack.Delta], bytes: Int64)

    public var bytes: Int64 {
        switch self {
        case .full(_, let bytes), .deltas(_, let bytes): bytes
        }
    }

    public var reason: String {
        switch self {
        case .full(let reason, _): reason
        case .deltas(let chain, let bytes): "delta: \(chain.count) step\(chain.count == 1 ? "" : "s"), \(bytes) bytes"
        }
    }

    /// The plan from the installed manifest (nil: not installed) to `listed`: the delta
    /// chain from the installed version when the server keeps every step of it, no archive's
    /// codec changed (tile hashes cover stored bytes, so a format change is a full update),
    /// and the chain is smaller than the pack; else a full download, saying why.
    public static func choose(installed: PackManifest?, listed: ListedPack) -> PackUpdatePlan {
        let full = listed.manifest.totalBytes
        guard let installed else { return .full(reason: "full: not installed", bytes: full) }
        guard installed.version < listed.version else {
            return .full(reason: "full: reinstalling version \(listed.version)", bytes: full)
        }
        func layers(_ m: PackManifest) -> [String] { m.archives.map { $0.name + "\u{0}" + $0.codec } }
        guard layers(installed) == layers(listed.manifest) else {
            return .full(reason: "full: format changed", bytes: full)
        }
        var chain: [ListedPack.Delta] = []
        var total: Int64 = 0
        for from in installed.version..<listed.version {
            guard let step = listed.deltas.first(where: { $0.from == from }) else {
                return .full(reason: "full: the server keeps no delta from version \(from)", bytes: full)
            }
            chain.append(step)
            total = total.addingReportingOverflow(step.bytes).overflow ? .max : total + step.bytes
        }
        guard total < full else {
            return .full(
                reason: "full: the deltas (\(total) bytes) are not smaller than the pack (\(full) bytes)", bytes: full)
        }
        return .deltas(chain, bytes: total)
    }
}

/// Whether an installed pack is current (``RegionInstaller/check(_:)``).
public enum PackUpdateStatus: Sendable, Equatable {
    case notInstalled(latest: Int)
    case upToDate(version: Int)
    case updateAvailable(installed: Int, latest: Int, plan: PackUpdatePlan)
}
