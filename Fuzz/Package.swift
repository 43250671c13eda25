// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets over tilepack's parsers (issue 27). Its own package so the main package
// stays free of sanitizer flags: build with
//   swift build -c debug --product fuzz-tiff -Xswiftc -sanitize=fuzzer,address
// (Scripts/fuzz does this and runs it). The flags reach every Swift module, the library's
// included, which is what gives libFuzzer its coverage. Each target's one-input logic is a
// public entry of the layer it tests (CodecFuzzEntry, GeoTIFFFuzzEntry, ArchiveFuzzEntry,
// RegionsFuzzEntry, ServerFuzzEntry), which FuzzCrashReplayTests replays Fuzz/crashes/ through.
let targets: [(name: String, module: String, product: String)] = [
    ("fuzz-tiff", "TilePack", "TilePack"),
    ("fuzz-vrt", "TilePack", "TilePack"),
    ("fuzz-mbtiles", "TilePack", "TilePack"),
    ("fuzz-png", "TilePack", "TilePack"),
    ("fuzz-pvrtc", "TilePack", "TilePack"),
    ("fuzz-astc", "TilePack", "TilePack"),
    ("fuzz-jws", "TilePack", "TilePack"),
    ("fuzz-catalog", "TilePack", "TilePack"),
    ("fuzz-route", "TilePackServer", "TilePackServer"),
]

let package = Package(
    name: "tilepack-fuzz",
    platforms: [.macOS(.v15)],
    products: targets.map { .executable(name: $0.name, targets: [$0.name]) },
    dependencies: [.package(name: "tilepack", path: "..")],
    targets: [
        // LLVMFuzzerRunDriver and the callback that hands each input to a target's entry.
        .target(name: "FuzzDriver", path: "Sources/FuzzDriver"),
    ] + targets.map { t in
        .executableTarget(
            name: t.name,
            dependencies: ["FuzzDriver", .product(name: t.product, package: "tilepack")],
            path: "Sources/\(t.name)"
        )
    },
    swiftLanguageModes: [.v6]
)
