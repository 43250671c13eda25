import TilePackCore
import TilePackCodec
import TilePackEncoders
import TilePackArchive
import TilePackStore
import TilePackRegions

/// Cuts one pack out of the master archives: every tile its ``PackPlan`` keeps, whole tiles
/// copied byte for byte, edge tiles decoded, their pixels outside the areas made transparent
/// (RGBA all zero) and re-encoded with the layer's own codec, elevation outside set to nodata
/// (NaN) and re-encoded with the master's encoding.
///
/// Why edge tiles are cut here and not on the device: a pack holds only what was bought, so
/// the runtime treats an installed, verified pack's tiles as whole and never masks them again,
/// and nothing outside the polygon is ever on the device to be read with `sqlite3`.
///
/// Cost: one indexed read per master tile of the plan's zooms, one polygon test per tile; a
/// decode, mask and encode per edge tile (ASTC/PVRTC at the encoder's quality level dominates).
public struct PackCutter {
    /// What the cut wrote, for the publisher's report.
    public struct Counts: Sendable, Equatable {
        public var wholeTiles = 0
        public var maskedTiles = 0
        public var elevationRows = 0
        /// The zooms each layer (by archive name) got tiles at.
        public var layerZooms: [String: ClosedRange<Int>] = [:]
        public init() {}

        mutating func note(_ archive: String, _ z: Int) {
            layerZooms[archive] = layerZooms[archive].map { min($0.lowerBound, z)...max($0.upperBound, z) } ?? z...z
        }
    }

    public let plan: PackPlan
    /// The masters, by archive name.
    public let masters: [String: MBTilesReader]
    public let level: PVRTCEncoder.Level

    public init(plan: PackPlan, masters: [String: MBTilesReader], level: PVRTCEncoder.Level = .quality) {
        self.plan = plan
        self.masters = masters
        self.level = level
    }

    /// ASTC's rate-distortion λ for a master's re-encoded edge tiles: the one its build recorded
    /// (``ASTCRateDistortion/recorded(inBuildOptions:)``; none, as before `--rdo`: off), so an
    /// edge tile is encoded as the master's own tiles were, not at whatever today's default is.
    static func rateDistortion(ofMaster metadata: [String: String]) -> ASTCRateDistortion {
        ASTCRateDistortion.recorded(inBuildOptions: metadata[MBTilesMetadata.Key.buildOptions])
    }

    /// The layers' descriptions, in plan order.
    public func layerInfos() throws(PackError) -> [PackLayerInfo] {
        var infos: [PackLayerInfo] = []
        for name in plan.layers {
            infos.append(PackLayerInfo(archive: name, metadata: try master(name).metadata))
        }
        return infos
    }

    /// Writes the plan's tiles of every layer into `writer` (layer numbers in plan order).
    /// - Throws: ``PackError`` naming the master archive and tile that could not be read,
    ///   decoded or re-encoded, or the writer's error.
    package func write(into writer: PackWriter) throws -> Counts {
        var counts = Counts()
        for (layer, name) in plan.layers.enumerated() {
            let master = try master(name)
            let summary = master.summary
            let rdo = Self.rateDistortion(ofMaster: master.metadata)
            guard let zooms = summary.zoomRange else { continue }
            let lo = max(zooms.lowerBound, plan.zooms.lowerBound), hi = min(zooms.upperBound, plan.zooms.upperBound)
            guard lo <= hi else { continue }
            for z in lo...hi {
                for tile in try master.tileIDs(zoom: z) {
                    switch plan.cut(tile, archive: name, side: summary.tileSize) {
                    case .omit:
                        continue
                    case .whole:
                        guard let bytes = try master.tile(tile) else { continue }
                        try writer.writeTile(bytes, layer: layer, tile: tile)
                        if let row = try master.storedElevation(tile) {
                            try writer.writeElevationRow(
                                encoding: row.encoding, width: row.width, height: row.height,
                                data: row.data, layer: layer, id: tile)
                            counts.elevationRows += 1
                        }
                        counts.wholeTiles += 1
                        counts.note(name, z)
                    case .masked(let mask):
                        guard let bytes = try master.tile(tile) else { continue }
                        try writer.writeTile(
                            try masked(bytes, mask: mask, summary: summary, rdo: rdo, tile: tile, path: master.path),
                            layer: layer, tile: tile)
                        if let row = try master.storedElevation(tile) {
                            let (grid, encoding, step) = try maskedElevation(
                                row, tile: tile, archive: name, path: master.path)
                            try writer.writeElevation(grid, encoding: encoding, step: step, layer: layer, id: tile)
                            counts.elevationRows += 1
                        }
                        counts.maskedTiles += 1
                        counts.note(name, z)
                    }
                }
            }
        }
        return counts
    }

    private func master(_ name: String) throws(PackError) -> MBTilesReader {
        guard let master = masters[name] else {
            throw PackError(
                .notFound, subject: name, "pack \(plan.packID) needs this master archive and it was not opened")
        }
        return master
    }

    /// The tile decoded, the unowned pixels cleared, encoded again with the layer's codec at `rdo`
    /// (ASTC only).
    private func masked(
        _ stored: [UInt8], mask: TileMask, summary: TileArchiveSummary, rdo: ASTCRateDistortion, tile: TileID,
        path: String
    ) throws(PackError) -> [UInt8] {
        guard let choice = summary.codec else {
            throw PackError(
                .invalidInput, subject: path,
                """
                tile \(tile) needs masking and its codec \(ErrorText.quoted(summary.codecName)) cannot be decoded \
                by tilepack
                """
            )
        }
        let side = summary.tileSize
        var rgba: [UInt8]
        do { rgba = try choice.decoder().decode(stored, width: side, height: side) } catch {
            throw PackError(.invalidInput, subject: path, "tile \(tile) does not decode: \(error)")
        }
        guard rgba.count == side * side * 4, mask.side == side else {
            throw PackError(
                .invalidInput, subject: path, "tile \(tile) decoded to \(rgba.count) bytes, not \(side)×\(side) RGBA")
        }
        rgba.withUnsafeMutableBufferPointer { px in
            for y in 0..<side {
                mask.forEachRun(row: y, owned: false) { run in
                    for i in (y * side + run.lowerBound) * 4..<(y * side + run.upperBound) * 4 { px[i] = 0 }
                }
            }
        }
        do {
            return try choice.codec(level: level, rdo: rdo).encode(rgba: rgba, width: side, height: side)
        } catch {
            throw PackError(
                .invalidInput, subject: path, "tile \(tile) cannot be re-encoded as \(choice.rawValue): \(error)")
        }
    }

    /// The elevation grid with the samples outside the areas NaN, and the encoding to store it in.
    private func maskedElevation(
        _ row: StoredElevation, tile: TileID, archive: String,
        path: String
    ) throws(PackError) -> (ElevationTile, ElevationEncoding, step: Double?) {
        guard let encoding = ElevationEncoding(rawValue: row.encoding) else {
            throw PackError(
                .invalidInput, subject: path, "elevation \(tile) has unknown encoding \(ErrorText.quoted(row.encoding))"
            )
        }
        var grid: ElevationTile
        var step: Double?
        do {
            grid = try encoding.decode(row.data, width: row.width, height: row.height, path: path)
            // Re-encoded at the master's own step: the kept samples are already multiples of
            // it, so they come back bit for bit.
            if encoding == .quantizedPlanarDeflate { step = try QuantizedElevation.step(of: row.data, path: path) }
        } catch {
            throw PackError(.invalidInput, subject: path, "elevation \(tile) does not decode: \(error)")
        }
        let w = grid.width, h = grid.height
        // The mask at the grid's own side when square, so every sample centre is decided
        // exactly; a non-square grid takes the pixel mask's cell holding each sample's centre.
        let side = w == h ? w : max(w, h)
        let keep: TileMask
        switch plan.cut(tile, archive: archive, side: side) {
        case .whole: return (grid, encoding, step)
        case .omit: keep = TileMask.Builder(side: side).build()
        case .masked(let m): keep = m
        }
        grid.values.withUnsafeMutableBufferPointer { v in
            for y in 0..<h {
                let my = w == h ? y : (2 * y + 1) * side / (2 * h)
                for x in 0..<w {
                    let mx = w == h ? x : (2 * x + 1) * side / (2 * w)
                    if !keep.isOwned(x: mx, y: my) { v[y * w + x] = .nan }
                }
            }
        }
        return (grid, encoding, step)
    }
}
