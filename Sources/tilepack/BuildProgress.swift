import ArgumentParser
import TilePack
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How `tilepack build` shows its progress on stderr.
enum ProgressStyle: String, CaseIterable, ExpressibleByArgument {
    /// `bar` when stderr is a terminal, else `lines`.
    case auto
    /// One line redrawn in place (carriage return) at most 10 times a second.
    case bar
    /// A plain line every 5 seconds and one at the end; no carriage returns (logs, CI).
    case lines
    /// One JSON object per line, at most once a second and once at the end.
    case json
    /// Nothing.
    case none

    /// `auto` resolved against whether stderr is a terminal.
    func resolved(stderrIsTerminal: Bool) -> ProgressStyle {
        self == .auto ? (stderrIsTerminal ? .bar : .lines) : self
    }
}

/// Shows a build's progress on stderr in one ``ProgressStyle``. Lives on the thread that
/// runs the build (the callback's thread); not thread-safe.
///
/// bar:   `z12 [########------------] 812/1243 tiles 65% 143 tiles/s ETA 0:03`
/// lines: `z12 812/1243 tiles 65% 143 tiles/s ETA 0:03`
/// json:  `{"done":812,"elapsed_seconds":5.68,"eta_seconds":3.01,"tiles_per_second":143,"total":1243,"zoom":12}`
final class BuildProgressDisplay {
    let style: ProgressStyle
    /// Seconds between two outputs of the style.
    let interval: Double
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant
    private let write: (String) -> Void
    private var lastOutput: Double?
    private var lastShown: TileBuilder.Progress?
    private var latest: TileBuilder.Progress?
    private var barWidthShown = 0

    /// `style` must be resolved (not `auto`).
    init(style: ProgressStyle, write: @escaping (String) -> Void = printProgress) {
        self.style = style
        switch style {
        case .bar: interval = 0.1
        case .json: interval = 1
        default: interval = 5
        }
        self.write = write
        start = clock.now
    }

    private var elapsed: Double { (clock.now - start).inSeconds }

    /// Called after each tile; outputs when the style's interval has passed.
    func update(_ progress: TileBuilder.Progress) {
        latest = progress
        guard style != .none, progress.total > 0 else { return }
        let now = elapsed
        if let last = lastOutput, now - last < interval { return }
        // lines: the first line only after one interval, not at 0 s.
        if lastOutput == nil, style == .lines, now < interval { return }
        show(progress, at: now)
    }

    /// The final state (always shown once) and, for the bar, the end of its line.
    func finish() {
        guard style != .none, let p = latest, p.total > 0 else { return }
        if lastShown != p { show(p, at: elapsed) }
        if style == .bar { write("\n") }
    }

    /// Ends a bar line before an error message.
    func interrupt() {
        if style == .bar, lastShown != nil { write("\n") }
    }

    private func show(_ p: TileBuilder.Progress, at seconds: Double) {
        lastOutput = seconds
        lastShown = p
        let rate = Self.rate(done: p.done, seconds: seconds)
        let eta = Self.eta(done: p.done, total: p.total, rate: rate)
        switch style {
        case .bar:
            let line = Self.barLine(p, rate: rate, eta: eta)
            // Spaces clear what a longer previous line left on the terminal.
            let pad = String(repeating: " ", count: max(0, barWidthShown - line.count))
            barWidthShown = line.count
            write("\r" + line + pad)
        case .lines:
            write(Self.plainLine(p, rate: rate, eta: eta) + "\n")
        case .json:
            let record = Record(
                done: p.done, total: p.total, zoom: p.zoom, tilesPerSecond: Self.round2(rate),
                etaSeconds: eta.map(Self.round2), elapsedSeconds: Self.round2(seconds))
            if let text = try? JSONOutput.string(record) { write(text + "\n") }
        case .auto, .none:
            break
        }
    }

    // MARK: formatting

    /// One `--progress json` line.
    struct Record: Codable, Equatable {
        let done: Int
        let total: Int
        let zoom: Int
        let tilesPerSecond: Double
        /// nil (null) until a rate is known.
        let etaSeconds: Double?
        let elapsedSeconds: Double

        enum CodingKeys: String, CodingKey {
            case done, total, zoom
            case tilesPerSecond = "tiles_per_second"
            case etaSeconds = "eta_seconds"
            case elapsedSeconds = "elapsed_seconds"
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(done, forKey: .done)
            try c.encode(total, forKey: .total)
            try c.encode(zoom, forKey: .zoom)
            try c.encode(tilesPerSecond, forKey: .tilesPerSecond)
            try c.encodeOrNull(etaSeconds, forKey: .etaSeconds)
            try c.encode(elapsedSeconds, forKey: .elapsedSeconds)
        }
    }

    static let barWidth = 24

    static func barLine(_ p: TileBuilder.Progress, rate: Double, eta: Double?) -> String {
        let filled = p.total > 0 ? min(barWidth, p.done * barWidth / p.total) : 0
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled)
        return "z\(p.zoom) [\(bar)] " + counts(p, rate: rate, eta: eta)
    }

    static func plainLine(_ p: TileBuilder.Progress, rate: Double, eta: Double?) -> String {
        "z\(p.zoom) " + counts(p, rate: rate, eta: eta)
    }

    /// `812/1243 tiles 65% 143 tiles/s ETA 0:03`
    static func counts(_ p: TileBuilder.Progress, rate: Double, eta: Double?) -> String {
        let percent = p.total > 0 ? p.done * 100 / p.total : 0
        return "\(p.done)/\(p.total) tiles \(percent)% \(rateText(rate)) tiles/s ETA \(eta.map(clockText) ?? "-:--")"
    }

    static func rate(done: Int, seconds: Double) -> Double {
        seconds > 0 ? Double(done) / seconds : 0
    }

    /// Seconds left at the mean rate so far; nil while no rate is known.
    static func eta(done: Int, total: Int, rate: Double) -> Double? {
        guard rate > 0, rate.isFinite else { return nil }
        return Double(max(0, total - done)) / rate
    }

    /// Whole tiles per second from 10 up, one decimal below.
    static func rateText(_ rate: Double) -> String {
        guard rate.isFinite, rate < 1e12 else { return "0" }
        if rate >= 10 { return String(Int(rate.rounded())) }
        let tenths = Int((rate * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// `m:ss`, or `h:mm:ss` from an hour up.
    static func clockText(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds < 1e9 else { return "-:--" }
        let s = Int(seconds.rounded(.up))
        let h = s / 3600, m = (s % 3600) / 60, sec = s % 60
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return h > 0 ? "\(h):\(two(m)):\(two(sec))" : "\(m):\(two(sec))"
    }

    static func round2(_ v: Double) -> Double {
        guard v.isFinite else { return v }
        return JSONOutput.number((v * 100).rounded() / 100)
    }
}

/// Whether stderr is a terminal (a person watching) rather than a file or pipe.
var stderrIsTerminal: Bool { isatty(2) == 1 }
