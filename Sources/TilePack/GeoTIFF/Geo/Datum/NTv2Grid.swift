import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads an NTv2 grid file (`.gsb`, the Canadian National Transformation v2 format that
/// BETA2007, CHENYX06, ntf_r93 and nzgd2kgrid0005 use).
///
/// Layout: an overview header of 11 16-byte records (8-byte name, 8-byte value: NUM_OREC,
/// NUM_SREC, NUM_FILE, GS_TYPE …), then per subgrid an 11-record header (SUB_NAME, PARENT,
/// CREATED, UPDATED, S_LAT, N_LAT, E_LONG, W_LONG, LAT_INC, LONG_INC, GS_COUNT) and
/// GS_COUNT 16-byte nodes (latitude shift, longitude shift, two accuracies; 4-byte floats).
/// Longitudes are positive west; nodes run from the south-east corner, each row westward,
/// rows northward. Byte order is whatever makes NUM_OREC read 11.
///
/// Every count and extent is checked against the file's size and against fixed caps before
/// anything is allocated; the result stores east-positive shifts, rows south to north and
/// columns west to east.
enum NTv2Grid {
    /// Files above this are refused before reading (the largest published NTv2 grids are
    /// tens of MiB).
    static let maximumFileBytes = 512 << 20
    static let maximumSubgrids = 10_000
    static let maximumSide = 200_000

    /// - Cost: one read of the file, O(nodes) to convert; allocates 8 bytes per node.
    static func read(path: String) throws(DatumGridError) -> HorizontalShiftGrid {
        let bytes = try GridFile.bytes(path: path, limit: maximumFileBytes)
        return try parse(bytes, path: path)
    }

    static func parse(_ bytes: [UInt8], path: String) throws(DatumGridError) -> HorizontalShiftGrid {
        func fail(_ kind: DatumGridError.Code, _ detail: String) -> DatumGridError {
            DatumGridError(path: path, code: kind, detail: "NTv2: " + detail)
        }
        guard bytes.count >= 176 else {
            throw fail(.truncated, "\(bytes.count) bytes, shorter than the 176-byte overview header")
        }
        guard text(bytes, 0, 8).hasPrefix("NUM_OREC") else {
            throw fail(.badHeader, "not an NTv2 file (no NUM_OREC record)")
        }
        let little: Bool
        if int32(bytes, 8, little: true) == 11 {
            little = true
        } else if int32(bytes, 8, little: false) == 11 {
            little = false
        } else {
            throw fail(.badHeader, "NUM_OREC is not 11")
        }
        guard text(bytes, 16, 8).hasPrefix("NUM_SREC"), int32(bytes, 24, little: little) == 11 else {
            throw fail(.badHeader, "NUM_SREC is not 11")
        }
        guard text(bytes, 32, 8).hasPrefix("NUM_FILE") else { throw fail(.badHeader, "no NUM_FILE record") }
        let count = Int(int32(bytes, 40, little: little))
        guard count >= 1, count <= maximumSubgrids else {
            throw fail(.badHeader, "NUM_FILE \(count) is outside 1…\(maximumSubgrids)")
        }
        let unit = text(bytes, 56, 8).uppercased()
        // Header extents in `unit`; degrees per unit and arc-seconds per unit.
        let (degrees, seconds): (Double, Double) =
            switch unit {
            case "SECONDS": (1.0 / 3600, 1)
            case "MINUTES": (1.0 / 60, 60)
            case "DEGREES": (1, 3600)
            default: throw fail(.badHeader, "GS_TYPE \"\(unit)\" is not SECONDS, MINUTES or DEGREES")
            }

        var offset = 176
        var names: [String] = []
        var parents: [String] = []
        var grids: [(west: Double, south: Double, dx: Double, dy: Double, cols: Int, rows: Int, shifts: [Float])] = []
        for k in 0..<count {
            guard bytes.count - offset >= 176 else {
                throw fail(.truncated, "subgrid \(k + 1) of \(count) header past the end of the file")
            }
            let h = offset
            guard text(bytes, h, 8).hasPrefix("SUB_NAME"), text(bytes, h + 160, 8).hasPrefix("GS_COUNT") else {
                throw fail(.badHeader, "subgrid \(k + 1) header lacks SUB_NAME/GS_COUNT")
            }
            let name = text(bytes, h + 8, 8)
            let parent = text(bytes, h + 24, 8)
            let s = double(bytes, h + 72, little: little), n = double(bytes, h + 88, little: little)
            let e = double(bytes, h + 104, little: little), w = double(bytes, h + 120, little: little)
            let dy = double(bytes, h + 136, little: little), dx = double(bytes, h + 152, little: little)
            let nodes = Int(int32(bytes, h + 168, little: little))
            guard [s, n, e, w, dy, dx].allSatisfy(\.isFinite), dx > 0, dy > 0, n > s, w > e,
                abs(s * degrees) <= 90, abs(n * degrees) <= 90, abs(e * degrees) <= 540, abs(w * degrees) <= 540
            else {
                throw fail(
                    .badHeader,
                    """
                    subgrid \(name) has an impossible extent or increment (S \(s) N \(n) E \(e) W \(w) Δlat \(dy) \
                    Δlon \(dx))
                    """
                )
            }
            let rowsF = ((n - s) / dy).rounded() + 1, colsF = ((w - e) / dx).rounded() + 1
            guard rowsF <= Double(maximumSide), colsF <= Double(maximumSide), let rows = Int(exactly: rowsF),
                let cols = Int(exactly: colsF),
                rows >= 2, cols >= 2
            else {
                throw fail(.tooLarge, "subgrid \(name) would be \(colsF)x\(rowsF) nodes (each side 2…\(maximumSide))")
            }
            guard nodes == rows * cols else {
                throw fail(.badHeader, "subgrid \(name) GS_COUNT \(nodes) is not its \(cols)x\(rows) nodes")
            }
            offset += 176
            guard (bytes.count - offset) / 16 >= nodes else {
                throw fail(
                    .truncated,
                    "subgrid \(name) needs \(nodes) nodes, the file ends after \((bytes.count - offset) / 16)")
            }
            var shifts = [Float](repeating: 0, count: 2 * nodes)
            for r in 0..<rows {
                for c in 0..<cols {
                    let at = offset + 16 * (r * cols + c)
                    let dLat = Double(float(bytes, at, little: little)) * seconds
                    let dLonWest = Double(float(bytes, at + 4, little: little)) * seconds
                    guard dLat.isFinite, dLonWest.isFinite else {
                        throw fail(.badValue, "subgrid \(name) node \(c),\(r) has a non-finite shift")
                    }
                    // File columns run westward; ours eastward, east-positive.
                    let o = 2 * (r * cols + (cols - 1 - c))
                    shifts[o] = Float(dLat)
                    shifts[o + 1] = Float(-dLonWest)
                }
            }
            offset += 16 * nodes
            names.append(name)
            parents.append(parent)
            grids.append(
                (
                    west: -w * degrees, south: s * degrees, dx: dx * degrees, dy: dy * degrees, cols: cols, rows: rows,
                    shifts: shifts
                ))
        }
        var subgrids: [ShiftSubgrid] = []
        for (k, g) in grids.enumerated() {
            var parent: Int?
            if parents[k].uppercased() != "NONE" && !parents[k].isEmpty {
                guard let p = names.firstIndex(of: parents[k]), p != k else {
                    throw fail(.badHeader, "subgrid \(names[k]) names parent \(parents[k]), which the file lacks")
                }
                parent = p
            }
            subgrids.append(
                ShiftSubgrid(
                    name: names[k], west: g.west, south: g.south, lonStep: g.dx, latStep: g.dy,
                    columns: g.cols, rows: g.rows, parent: parent, shifts: g.shifts))
        }
        return HorizontalShiftGrid(path: path, subgrids: subgrids)
    }

    // Field readers: callers have checked offset + width ≤ bytes.count.
    /// An 8-byte text field without its padding (spaces or NULs either side).
    private static func text(_ b: [UInt8], _ at: Int, _ n: Int) -> String {
        var field = b[at..<(at + n)]
        while let f = field.first, f == 0x20 || f == 0 { field.removeFirst() }
        while let l = field.last, l == 0x20 || l == 0 { field.removeLast() }
        return String(decoding: field, as: UTF8.self)
    }
    private static func word(_ b: [UInt8], _ at: Int, _ n: Int, little: Bool) -> UInt64 {
        var v: UInt64 = 0
        for i in 0..<n { v |= UInt64(b[at + (little ? i : n - 1 - i)]) << (8 * UInt64(i)) }
        return v
    }
    private static func int32(_ b: [UInt8], _ at: Int, little: Bool) -> Int32 {
        Int32(truncatingIfNeeded: word(b, at, 4, little: little))
    }
    private static func float(_ b: [UInt8], _ at: Int, little: Bool) -> Float {
        Float(bitPattern: UInt32(truncatingIfNeeded: word(b, at, 4, little: little)))
    }
    private static func double(_ b: [UInt8], _ at: Int, little: Bool) -> Double {
        Double(bitPattern: word(b, at, 8, little: little))
    }
}

/// Bounded reads of grid files: regular files only, opened non-blocking so a FIFO fails at
/// once, size checked with fstat before the single allocation.
enum GridFile {
    static func bytes(path: String, limit: Int) throws(DatumGridError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw DatumGridError(
                path: path, code: .unreadable, detail: "cannot open (\(String(cString: strerror(errno))))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw DatumGridError(path: path, code: .unreadable, detail: RegularFile.notRegular(mode: st.st_mode))
        }
        guard let size = Int(exactly: st.st_size), size <= limit else {
            throw DatumGridError(
                path: path, code: .tooLarge, detail: "\(st.st_size) bytes, over the \(limit >> 20) MiB a grid may have")
        }
        var out = [UInt8](repeating: 0, count: size)
        var done = 0
        while done < size {
            let n = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, size - done, off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw DatumGridError(path: path, code: .truncated, detail: "read stopped at byte \(done) of \(size)")
            }
            done += n
        }
        return out
    }
}
