import ArgumentParser
import TilePack

/// How `tilepack download` shows progress on stderr (stdout stays for results).
enum DownloadProgressStyle: String, CaseIterable, ExpressibleByArgument {
    /// `bar` when stderr is a terminal, else `none`.
    case auto
    /// `chamonix [#########-----------] 45% 17.2/38.2 MB 2.1 MB/s ETA 0:10`, redrawn in place.
    case bar
    /// One JSON object per line: pack_id, phase, file, bytes_received, bytes_total, resumed_from,
    /// bytes_per_second, eta_seconds.
    case json
    case none

    func resolved(stderrIsTerminal: Bool) -> DownloadProgressStyle {
        self == .auto ? (stderrIsTerminal ? .bar : .none) : self
    }
}

/// Draws ``PackProgress`` events; called from the download's task, so its state is locked.
final class DownloadProgressDisplay: Sendable {
    let style: DownloadProgressStyle
    private let drewBar = Locked(false)

    init(style: DownloadProgressStyle) { self.style = style }

    /// The callback for ``RegionInstaller``; nil for `none`.
    var callback: (@Sendable (PackProgress) -> Void)? {
        style == .none ? nil : { @Sendable [self] progress in self.show(progress) }
    }

    func show(_ p: PackProgress) {
        switch style {
        case .bar:
            let width = 24
            let filled = Int((p.fraction * Double(width)).rounded(.down))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            let eta = p.timeRemaining.map { Self.clock($0.inSeconds) } ?? "--:--"
            let phase = p.phase == .downloading ? "" : " \(p.phase.rawValue)"
            printProgress(
                """
                \r\(p.packID) [\(bar)] \(Int(p.fraction * 100))% \
                \(Self.megabytes(p.bytesReceived))/\(Self.megabytes(p.totalBytes)) MB 
                """
                    + "\(Self.megabytes(Int64(p.bytesPerSecond))) MB/s ETA \(eta)\(phase)\u{1b}[K")
            drewBar.withLock { $0 = true }
        case .json:
            printNotice((try? JSONOutput.string(Event(p))) ?? "{}")
        case .auto, .none:
            break
        }
    }

    /// Ends the bar's line so what follows starts on its own.
    func finish() {
        if drewBar.withLock({ drew in
            defer { drew = false }; return drew
        }) {
            printProgress("\n")
        }
    }

    static func megabytes(_ bytes: Int64) -> String {
        let mb = Double(bytes) / 1_000_000
        return mb < 10 ? String(Double(Int(mb * 100)) / 100) : String(Double(Int(mb * 10)) / 10)
    }

    static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds < 360_000 else { return "--:--" }
        let s = Int(seconds.rounded(.up))
        return "\(s / 60):" + (s % 60 < 10 ? "0" : "") + "\(s % 60)"
    }

    struct Event: Encodable {
        let p: PackProgress
        init(_ p: PackProgress) { self.p = p }
        enum CodingKeys: String, CodingKey {
            case packID = "pack_id", phase, file, bytesReceived = "bytes_received", bytesTotal = "bytes_total"
            case resumedFrom = "resumed_from", bytesPerSecond = "bytes_per_second", etaSeconds = "eta_seconds"
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(p.packID, forKey: .packID)
            try c.encode(p.phase.rawValue, forKey: .phase)
            try c.encode(p.file, forKey: .file)
            try c.encode(p.bytesReceived, forKey: .bytesReceived)
            try c.encode(p.totalBytes, forKey: .bytesTotal)
            try c.encode(p.resumedFrom, forKey: .resumedFrom)
            try c.encode(p.bytesPerSecond.rounded(), forKey: .bytesPerSecond)
            try c.encodeOrNull(p.timeRemaining.map { ($0.inSeconds * 10).rounded() / 10 }, forKey: .etaSeconds)
        }
    }
}
