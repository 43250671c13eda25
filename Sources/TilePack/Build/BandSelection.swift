import TilePackCore
import TilePackGeoTIFF

/// Which source bands a build draws, in what order: `--bands 3,2,1`, a VRT that takes
/// different bands of its files, or the file's own colour names.
///
/// Bands are numbered from 1 as GDAL numbers them. One band is drawn as grey (or classified
/// like any single band), three as R, G, B; a 2nd of two or a 4th of four is the alpha band.
/// Without `--bands`, a source with three or more data bands whose GDAL colour
/// interpretations (COLORINTERP) — or else band descriptions — name exactly one Red, one
/// Green and one Blue band is drawn with those, in that order; other multi-band sources
/// draw their first three data bands, and the summary says so when there are more.
///
/// ```swift
/// let picks = try BandSelection.parse("3,2,1")               // [3, 2, 1]
/// let chosen = try BandSelection.resolve(requested: picks, source: tiff)
/// ```
public struct BandSelection: Sendable, Equatable, CustomStringConvertible {
    /// Source bands (0-based) in drawing order.
    public let bands: [Int]
    /// Why these: "--bands 3,2,1", "COLORINTERP names Red, Green, Blue".
    public let reason: String

    public init(bands: [Int], reason: String) {
        self.bands = bands
        self.reason = reason
    }

    /// `3,2,1 (--bands)`: GDAL's 1-based numbers and the reason.
    public var description: String { bands.map { String($0 + 1) }.joined(separator: ",") + " (\(reason))" }

    /// Parses `--bands`: 1 to 4 comma-separated band numbers from 1.
    /// - Throws: ``BuildError/invalidOption(_:)`` naming `--bands` and the text.
    public static func parse(_ text: String) throws(BuildError) -> [Int] {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { String($0.trimmingWhitespace()) }
        var out: [Int] = []
        for p in parts {
            guard let n = Int(p), n >= 1, n <= 65_535 else {
                throw BuildError.invalidOption(
                    "--bands \(ErrorText.quoted(text)): \(ErrorText.quoted(String(p))) is not a band number (1, 2, …)")
            }
            out.append(n)
        }
        guard (1...4).contains(out.count) else {
            throw BuildError.invalidOption(
                """
                --bands \(ErrorText.quoted(text)): give 1 band (grey), 3 (R,G,B), or one more as alpha; got \
                \(out.count)
                """
            )
        }
        return out
    }

    /// The selection a build applies to `source`: `requested` (1-based, from ``parse(_:)``)
    /// checked against the source's band count, else the file's named R, G, B bands when
    /// they are not already its first three; nil when the source is drawn as it is.
    /// - Throws: ``BuildError/invalidOption(_:)`` naming `--bands` and the source's band count.
    public static func resolve(requested: [Int]?, source: any RasterSource) throws(BuildError) -> BandSelection? {
        let count = source.bands
        if let requested {
            guard (1...4).contains(requested.count) else {
                throw BuildError.invalidOption("--bands: give 1 to 4 bands, got \(requested.count)")
            }
            for b in requested where b < 1 || b > count {
                throw BuildError.invalidOption(
                    """
                    --bands \(requested.map(String.init).joined(separator: ",")): the source has no band \(b); it \
                    has \(count) band\(count == 1 ? "" : "s") (1…\(count))
                    """
                )
            }
            return BandSelection(bands: requested.map { $0 - 1 }, reason: "--bands")
        }
        guard let rgb = namedRGB(source) else { return nil }
        let alpha = source.alphaBand.map { [$0] } ?? []
        if rgb.bands == [0, 1, 2], count == 3 + alpha.count { return nil }
        return BandSelection(bands: rgb.bands + alpha, reason: rgb.reason)
    }

    /// The bands the file names Red, Green and Blue, by COLORINTERP first, else DESCRIPTION;
    /// nil unless each colour names exactly one data band.
    static func namedRGB(_ source: any RasterSource) -> (bands: [Int], reason: String)? {
        let hints = source.terrainHints
        let data = (0..<source.bands).filter { $0 != source.alphaBand }
        guard data.count >= 3 else { return nil }
        for (names, label) in [(hints.colorInterps, "COLORINTERP"), (hints.descriptions, "DESCRIPTION")] {
            var picks: [Int] = []
            for colour in ["red", "green", "blue"] {
                let matches = data.filter { b in names[b].map { ColorDecision.describes($0, [colour]) } ?? false }
                guard matches.count == 1, let b = matches.first else { break }
                picks.append(b)
            }
            if picks.count == 3 {
                return (
                    picks,
                    "\(label) names bands \(picks.map { String($0 + 1) }.joined(separator: ",")) Red, Green, Blue"
                )
            }
        }
        return nil
    }

    /// What the summary says of a multi-band source drawn as its first three bands without
    /// names: a hint at `--bands` (a Landsat-order stack is blue, green, red, …). Nil otherwise.
    public static func hint(for source: any RasterSource, selection: BandSelection?) -> String? {
        guard selection == nil, source.colorMap == nil else { return nil }
        let data = (0..<source.bands).filter { $0 != source.alphaBand }
        guard data.count > 3 else { return nil }
        return
            """
            1,2,3 of \(data.count) drawn as R,G,B (the file names no colours); for a Landsat-order stack (blue, \
            green, red, NIR, …) use --bands 3,2,1
            """
    }
}

/// A source seen through a ``BandSelection``: its bands picked and reordered (a band may be
/// picked twice), everything else (size, type, nodata, georeference) the base's. The
/// base's alpha band stays alpha when picked; hints follow their bands.
///
/// - Cost: `readFloats` reads the base's window (all its bands) and copies the picked
///   samples: one extra pass over the window.
struct SelectedBandsSource: RasterSource {
    let base: any RasterSource
    /// Base bands (0-based) in order.
    let picks: [Int]
    let terrainHints: TerrainHints

    /// `extra` (e.g. a VRT's own band descriptions, by output band) wins over the base's hints.
    init(base: any RasterSource, picks: [Int], extra: TerrainHints = TerrainHints()) {
        precondition(
            !picks.isEmpty && picks.allSatisfy { $0 >= 0 && $0 < base.bands }, "picks are checked by BandSelection")
        self.base = base
        self.picks = picks
        let from = base.terrainHints
        func remap(_ d: [Int: String], _ over: [Int: String]) -> [Int: String] {
            var out: [Int: String] = [:]
            for (k, b) in picks.enumerated() { if let v = over[k] ?? d[b] { out[k] = v } }
            return out
        }
        var hints = TerrainHints(
            verticalCSType: from.verticalCSType, verticalDatum: from.verticalDatum, verticalUnits: from.verticalUnits,
            unitTypes: remap(from.unitTypes, extra.unitTypes),
            descriptions: remap(from.descriptions, extra.descriptions))
        hints.colorInterps = remap(from.colorInterps, extra.colorInterps)
        terrainHints = hints
    }

    var width: Int { base.width }
    var height: Int { base.height }
    var bands: Int { picks.count }
    /// The base decodes all of its bands for every read; the picks are copied out after.
    var decodedBands: Int { base.decodedBands }
    var decodedBlockBytes: Int { base.decodedBlockBytes }
    var sampleType: SampleType { base.sampleType }
    var nodata: Double? { base.nodata }
    /// A palette survives only as the single band of a palette image.
    var colorMap: [UInt16]? { picks.count == 1 && base.bands == 1 ? base.colorMap : nil }
    var alphaBand: Int? { base.alphaBand.flatMap { a in picks.lastIndex(of: a) } }
    var storedBytes: StoredByteMap? { base.storedBytes }

    func readFloats(x: Int, y: Int, width: Int, height: Int) throws -> [Float] {
        let all = try base.readFloats(x: x, y: y, width: width, height: height)
        let n = width * height, from = base.bands, to = picks.count
        guard all.count == n * from else { throw BuildError.sourceReadMismatch(expected: n * from, got: all.count) }
        var out = [Float](repeating: 0, count: n * to)
        all.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for p in 0..<n {
                    for (k, b) in picks.enumerated() { dst[p * to + k] = src[p * from + b] }
                }
            }
        }
        return out
    }
}

/// A layered mosaic stays layered through a selection: each layer is seen through it too.
extension SelectedBandsSource: LayeredRasterSource {
    var rasterLayers: [any RasterLayer] {
        guard let layered = base as? any LayeredRasterSource else { return [] }
        return layered.rasterLayers.map { SelectedBandsLayer(layer: $0, picks: picks) }
    }
}

/// One layer of a layered mosaic seen through a ``BandSelection``.
struct SelectedBandsLayer: RasterLayer {
    let layer: any RasterLayer
    let selected: SelectedBandsSource

    init(layer: any RasterLayer, picks: [Int]) {
        self.layer = layer
        selected = SelectedBandsSource(base: layer, picks: picks)
    }

    var width: Int { selected.width }
    var height: Int { selected.height }
    var bands: Int { selected.bands }
    var sampleType: SampleType { selected.sampleType }
    var nodata: Double? { selected.nodata }
    var colorMap: [UInt16]? { selected.colorMap }
    var alphaBand: Int? { selected.alphaBand }
    var terrainHints: TerrainHints { selected.terrainHints }
    var layerGeoreference: any SourceGeoreference { layer.layerGeoreference }
    func priority(col: Int, row: Int) -> Int? { layer.priority(col: col, row: row) }
    func readFloats(x: Int, y: Int, width: Int, height: Int) throws -> [Float] {
        try selected.readFloats(x: x, y: y, width: width, height: height)
    }
}
