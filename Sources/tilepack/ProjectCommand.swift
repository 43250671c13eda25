import ArgumentParser
import TilePack

/// `tilepack project`: batch coordinate conversion through tilepack's own projection code,
/// one point per line on stdin. It exists so the projections can be checked against PROJ
/// (Scripts/proj-check) and so a user can see where a CRS puts a point.
struct ProjectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "project",
        abstract: "Convert lon/lat to CRS coordinates (or back with --inverse), one point per line on stdin.",
        discussion: """
            Each input line holds two numbers separated by spaces, tabs or a comma: "LON LAT" \
            (degrees) or, with --inverse, "X Y" in the CRS's units. Output is one "X Y" (or \
            "LON LAT") line per input line at full double precision; a point with no image \
            prints "nan nan". Longitudes/latitudes are on the CRS's own datum unless --wgs84 \
            asks for the TOWGS84 shift tilepack applies when georeferencing. X and Y come in \
            PROJ's always_xy order and signs (easting first; EPSG:2065 southing, westing). \
            Codes outside the built-in table come from proj.db (--proj-db, PROJ_DATA, \
            PROJ_LIB, /usr/share/proj/proj.db).
            """
    )

    @Option(
        name: .long,
        help: "EPSG code of the CRS (the built-in table, else proj.db; see docs/BUILDING.md, Georeferencing).")
    var epsg: Int?

    @Flag(name: .long, help: "Print every EPSG code tilepack accepts (built-in and proj.db), one per line, and exit.")
    var listCodes = false

    @Flag(name: .long, help: "With --list-codes: one JSON array of {code, name, method, source, deprecated}.")
    var json = false

    @OptionGroup var projDB: ProjDBOptions

    @Flag(name: .long, help: "Convert CRS coordinates to lon/lat instead of lon/lat to CRS coordinates.")
    var inverse = false

    @Flag(name: .long, help: "Read/write WGS 84 lon/lat, applying the datum shift, instead of the CRS's own datum.")
    var wgs84 = false

    @Flag(name: .long, help: "Print the CRS (name, method, parameters, ellipsoid) and exit without reading stdin.")
    var describe = false

    func validate() throws {
        if !listCodes && epsg == nil { throw ValidationError("--epsg CODE is required (or --list-codes)") }
        if json && !listCodes { throw ValidationError("--json goes with --list-codes") }
    }

    func run() throws {
        let registry = try projDB.registry()
        if listCodes {
            let entries: [CRSRegistry.Entry]
            do { entries = try registry.acceptedCodes() } catch {
                printError(error.description)
                throw ExitCode(error.category.exitStatus)
            }
            print(json ? try JSONOutput.string(entries) : entries.map { String($0.code) }.joined(separator: "\n"))
            return
        }
        let crs: CRS
        do {
            crs = try registry.crs(epsg: epsg ?? 0)
        } catch {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
        if describe {
            let el = crs.datum.ellipsoid
            print("\(crs)")
            print("ellipsoid a=\(el.semiMajorAxis) rf=\(el.inverseFlattening)")
            if let note = crs.datumNote { print("note: \(note)") }
            return
        }
        var lineNumber = 0
        var out = ""
        out.reserveCapacity(1 << 16)
        while let line = readLine() {
            lineNumber += 1
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," })
            if fields.isEmpty { continue }
            guard fields.count == 2, let a = Double(fields[0]), let b = Double(fields[1]) else {
                printError("stdin line \(lineNumber): expected two numbers, got \"\(line)\"")
                throw ExitCode(2)
            }
            let r: (Double, Double)
            switch (inverse, wgs84) {
            case (false, false): r = crs.project(lon: a, lat: b)
            case (false, true): r = crs.coordinate(lon: a, lat: b)
            case (true, false): r = crs.unproject(x: a, y: b)
            case (true, true): r = crs.lonLat(x: a, y: b)
            }
            out += r.0.isFinite && r.1.isFinite ? "\(r.0) \(r.1)\n" : "nan nan\n"
            if out.utf8.count > 60_000 {
                print(out, terminator: "")
                out.removeAll(keepingCapacity: true)
            }
        }
        print(out, terminator: "")
    }
}
