import TilePackCore
import TilePackGeoTIFF
import TilePackArchive

/// Which zooms keep their elevation grid (`--elevation`).
public enum ElevationLevels: String, Sendable, CaseIterable {
    /// No elevation table: the smallest archive; `query` answers no metres.
    case none
    /// The max zoom only: `query` at that zoom answers; coarser zooms have no metres.
    case maxZoom = "max-zoom"
    /// Every zoom (the default): query and the store's hillshade need them at every zoom.
    case all

    /// Whether a tile at zoom `z` of a pyramid whose max zoom is `maxZoom` stores its grid.
    public func stores(zoom z: Int, maxZoom: Int) -> Bool {
        switch self {
        case .none: false
        case .maxZoom: z == maxZoom
        case .all: true
        }
    }
}

/// How elevation grids are stored (`--elevation-encoding`).
public enum ElevationStorage: String, Sendable, CaseIterable {
    /// `q-planar-deflate` at the build's step (``ElevationPrecision``); format version 2.
    case quantized
    /// Lossless Float32 (the smaller of `f32le-deflate` and `f32-fpredict-deflate` per
    /// tile), as tilepack wrote before format version 2; 4–5× larger.
    case float32
}

/// The quantisation step of a build's elevation (and of any single band stored in the
/// elevation table: percent, classes, values), decided once from the source:
///
/// `step = max(precision, source step)`, where `precision` is `--elevation-precision`
/// (default ``defaultPrecision``, 0.01 of the band's unit) and the source step is 1 for integer
/// samples, and for float samples the coarsest of ``candidateSteps`` that every valid sample
/// of the decimated statistics pass is (as Float32) an exact multiple of, when that pass has
/// at least ``minimumSamples`` distinct values (else the precision alone). So integer sources
/// are stored exactly (integer-valued tiles decode bit for bit; resampled fractions round to
/// the nearest integer), float sources to within step/2.
public enum ElevationPrecision {
    public static let defaultPrecision = 0.01
    /// Steps a float source may be quantised to, coarsest first (never coarser than 1:
    /// a decimated sample of a few hundred values is no proof of a 10 m grid).
    public static let candidateSteps: [Double] = [1, 0.5, 0.25, 0.2, 0.1, 0.05, 0.02, 0.01]
    public static let minimumSamples = 32

    /// The step for `source`'s first band. `precision` nil takes ``defaultPrecision``.
    /// - Cost: integer sources none; float sources one decimated pass (≤ 1 Mi samples).
    static func step(for source: any RasterSource, precision: Double?) throws -> Double {
        let wanted = precision ?? defaultPrecision
        if !source.sampleType.isFloat { return max(wanted, 1) }
        let sample = try SourceStatistics.samples(of: source, bands: [0])[0]
        return max(wanted, detectedStep(sortedValues: sample.values) ?? 0)
    }

    /// The coarsest candidate step every value is a multiple of, or nil (too few distinct values,
    /// or none fits).
    /// - Cost: O(values × candidates) at worst.
    public static func detectedStep(sortedValues values: [Float]) -> Double? {
        var distinct = 0
        var last: Float?
        for v in values where v != last {
            distinct += 1
            last = v
            if distinct >= minimumSamples { break }
        }
        guard distinct >= minimumSamples else { return nil }
        return candidateSteps.first { step in
            values.allSatisfy { v in
                let q = (Double(v) / step).rounded()
                return q.magnitude <= Double(QuantizedElevation.maxMagnitude) && Float(q * step) == v
            }
        }
    }
}
