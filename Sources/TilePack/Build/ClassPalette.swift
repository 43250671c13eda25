import TilePackCore
import TilePackArchive

/// The categorical colours of `--color classes`, from a fixed palette of 32 colours told apart
/// easily (Kelly's 22 colours of maximum contrast without white and black, then 12 of
/// Tableau 20).
///
/// Class `v` (an integer) has colour `v mod 32` (non-negative remainder), its *home* entry, so
/// a class has the same colour in every archive as far as possible. Codes 32 apart share a
/// home (NLCD's 11 open water and 43 mixed forest), so a build's palette is made from its
/// distinct codes (the sorted distinct values of the statistics sample, at most 32):
///
/// 1. every code whose home no smaller code of the build claims keeps its home colour;
/// 2. each other code, in ascending order, takes the next entry after its home (cyclically,
///    32 → 0) that no code of this build uses, neither as home nor as an earlier reassignment.
///
/// So the build's codes get distinct colours, deterministically, and a build without
/// collisions keeps `v mod 32` for every code. `tilepack:legend` lists the colours actually
/// used. A code the table does not hold (one the decimated statistics pass missed, or every
/// code when the source has more than 32 distinct values) falls back to its home colour and
/// may then share it with another class.
///
/// Invariant: ``overrides`` is sorted by code, holds only codes whose entry differs from their
/// home, and its entries are distinct from each other and from every home of ``codes``.
public struct ClassPalette: Sendable {
    /// RGB, 32 entries.
    public static let colors: [(UInt8, UInt8, UInt8)] = [
        (0xF3, 0xC3, 0x00), (0x87, 0x56, 0x92), (0xF3, 0x84, 0x00), (0xA1, 0xCA, 0xF1),
        (0xBE, 0x00, 0x32), (0xC2, 0xB2, 0x80), (0x84, 0x84, 0x82), (0x00, 0x88, 0x56),
        (0xE6, 0x8F, 0xAC), (0x00, 0x67, 0xA5), (0xF9, 0x93, 0x79), (0x60, 0x4E, 0x97),
        (0xF6, 0xA6, 0x00), (0xB3, 0x44, 0x6C), (0xDC, 0xD3, 0x00), (0x88, 0x2D, 0x17),
        (0x8D, 0xB6, 0x00), (0x65, 0x45, 0x22), (0xE2, 0x58, 0x22), (0x2B, 0x3D, 0x26),
        (0x1F, 0x77, 0xB4), (0x2C, 0xA0, 0x2C), (0x98, 0xDF, 0x8A), (0xD6, 0x27, 0x28),
        (0x94, 0x67, 0xBD), (0xC5, 0xB0, 0xD5), (0x8C, 0x56, 0x4B), (0xE3, 0x77, 0xC2),
        (0x17, 0xBE, 0xCF), (0x9E, 0xDA, 0xE5), (0xBC, 0xBD, 0x22), (0xAE, 0xC7, 0xE8),
    ]

    /// The build's distinct codes (integers, ascending).
    public let codes: [Float]
    /// (code, palette entry) for the codes moved off their home entry, ascending by code.
    public let overrides: [(code: Float, index: Int)]

    /// The palette for a build whose distinct class codes are `codes` (any order; duplicates,
    /// non-integers and values beyond ±2³¹ are dropped).
    /// Cost: O(n log n + 32·n) for n codes; once per build.
    public init(codes given: [Float]) {
        let codes = Array(Set(given.filter { Self.home($0) != nil && $0.rounded() == $0 })).sorted()
        var claimed = Set<Int>()
        var collided: [(Float, Int)] = []
        for v in codes {
            guard let h = Self.home(v) else { continue }
            if !claimed.insert(h).inserted { collided.append((v, h)) }
        }
        var overrides: [(code: Float, index: Int)] = []
        let n = Self.colors.count
        for (v, h) in collided {
            // The next entry after the home that no code of this build uses. With more codes
            // than entries none may be free: the code keeps its home (shared, as documented).
            guard let free = (1..<n).lazy.map({ (h + $0) % n }).first(where: { !claimed.contains($0) }) else {
                continue
            }
            claimed.insert(free)
            overrides.append((v, free))
        }
        self.codes = codes
        self.overrides = overrides
    }

    /// The home entry of class `v` (rounded to an integer): `v mod 32`; nil for a value that is
    /// not a finite number within ±2³¹.
    @inline(__always)
    public static func home(_ v: Float) -> Int? {
        let r = v.rounded()
        // Range-check in Float: a wild sample must not trap in the Int conversion.
        guard r.isFinite, r > -2_147_483_648, r < 2_147_483_648 else { return nil }
        let n = colors.count
        return ((Int(r) % n) + n) % n
    }

    /// The palette entry of class `v` in this build: its override, else its home; nil for a
    /// value ``home(_:)`` rejects (drawn transparent).
    /// Cost: O(1) without collisions, else a linear scan of the (few) overrides; per pixel.
    @inline(__always)
    public func index(_ v: Float) -> Int? {
        guard let h = Self.home(v) else { return nil }
        if overrides.isEmpty { return h }
        let r = v.rounded()
        for o in overrides where o.code == r { return o.index }
        return h
    }

    /// The colour of class `v` in this build (see ``index(_:)``).
    @inline(__always)
    public func color(_ v: Float) -> (UInt8, UInt8, UInt8)? {
        index(v).map { Self.colors[$0] }
    }

    /// One legend entry per code of the build ("class 7"), with the colour it is drawn in.
    public var legend: [LegendEntry] {
        codes.compactMap { v in
            color(v).map {
                LegendEntry(value: Double(v), label: "class \(ColorDecision.number(v))", rgba: [$0.0, $0.1, $0.2, 255])
            }
        }
    }
}
