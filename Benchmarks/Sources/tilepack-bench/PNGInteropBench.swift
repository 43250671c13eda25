// `tilepack-bench png-interop DIR`: the Swift half of Scripts/png-check. Decodes the PNGs
// Pillow wrote in DIR (`pillow-NAME.png`) and compares them with Pillow's own RGBA
// (`pillow-NAME.rgba`), then writes our PNGs (`ours-NAME.png` and the `.rgba` they hold) for
// Pillow and GDAL to read. Prints one line per file; exits 1 on any difference. (Before, a test
// that ran only with TILEPACK_PNG_INTEROP_DIR set.)
import TilePack
#if canImport(Glibc)
import Glibc
#endif

func runPNGInterop(_ args: [String]) {
    guard args.count == 1 else { fail("usage: tilepack-bench png-interop DIR") }
    let dir = args[0]
    guard let d = opendir(dir) else { fail("\(dir): cannot open the folder") }
    var names: [String] = []
    while let entry = readdir(d) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        if name.hasPrefix("pillow-") && name.hasSuffix(".png") { names.append(String(name.dropLast(4))) }
    }
    closedir(d)
    guard names.count >= 5 else { fail("\(dir): Pillow's samples (pillow-*.png) are missing") }
    var failures = 0
    for name in names.sorted() {
        do {
            let image = try PNGDecoder().decode(try readAll("\(dir)/\(name).png"), source: name)
            let same = image.pixels == (try readAll("\(dir)/\(name).rgba"))
            print("\(same ? "ok  " : "FAIL") \(name): \(image.width)x\(image.height)\(same ? "" : ", pixels differ from Pillow's")")
            if !same { failures += 1 }
        } catch {
            print("FAIL \(name): \(error)")
            failures += 1
        }
    }
    // SplitMix64 (the library's is package-internal): the same bytes on every machine.
    var state: UInt64 = 99
    func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    let w = 256, h = 256
    var random = [UInt8](repeating: 0, count: w * h * 4)
    for i in random.indices { random[i] = UInt8(truncatingIfNeeded: next()) }
    var opaque = random, gray = [UInt8](repeating: 0, count: w * h * 4)
    var grayAlpha = gray, gradient = gray
    for p in 0..<(w * h) {
        let x = p % w, y = p / w, v = UInt8(truncatingIfNeeded: x ^ y)
        opaque[4 * p + 3] = 255
        gray[4 * p] = v; gray[4 * p + 1] = v; gray[4 * p + 2] = v; gray[4 * p + 3] = 255
        grayAlpha[4 * p] = v; grayAlpha[4 * p + 1] = v; grayAlpha[4 * p + 2] = v
        grayAlpha[4 * p + 3] = UInt8(truncatingIfNeeded: x + y)
        gradient[4 * p] = UInt8(x); gradient[4 * p + 1] = UInt8(y)
        gradient[4 * p + 2] = UInt8((x + y) / 2); gradient[4 * p + 3] = UInt8(255 - y)
    }
    let samples = [("random-rgba", random), ("opaque-rgb", opaque), ("gray", gray), ("gray-alpha", grayAlpha),
                   ("gradient-rgba", gradient)]
    for (name, rgba) in samples {
        do {
            try writeAll("\(dir)/ours-\(name).png", try PNGEncoder().encode(rgba: rgba, width: w, height: h))
            try writeAll("\(dir)/ours-\(name).rgba", rgba)
        } catch {
            fail("\(dir)/ours-\(name): \(error)")
        }
    }
    print("\(names.count - failures) of \(names.count) Pillow PNGs decoded alike; wrote \(samples.count) of ours")
    exit(failures == 0 ? 0 : 1)
}

private struct FileError: Error, CustomStringConvertible {
    let description: String
}

private func readAll(_ path: String) throws -> [UInt8] {
    guard let f = fopen(path, "rb") else { throw FileError(description: "\(path): cannot open") }
    defer { fclose(f) }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, f) }
        if n == 0 { break }
        out.append(contentsOf: chunk[0..<n])
    }
    return out
}

private func writeAll(_ path: String, _ bytes: [UInt8]) throws {
    guard let f = fopen(path, "wb") else { throw FileError(description: "\(path): cannot create") }
    defer { fclose(f) }
    let n = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
    guard n == bytes.count else { throw FileError(description: "\(path): short write") }
}
