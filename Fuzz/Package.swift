// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets over tilepack's parsers (issue 27). Its own package, so the main package
// has no fuzz targets and no sanitizer flags unless asked. Scripts/fuzz builds it with
//   TILEPACK_SANITIZE=fuzzer swift build --package-path Fuzz --scratch-path .build
// and runs it: these targets and tilepack's own modules are compiled with
// -sanitize=fuzzer,address (the coverage libFuzzer follows), the dependencies are not, and
// the scratch path shared with `swift test` reuses their build. Each target's one-input logic
// is a public entry of the layer it tests (CodecFuzzEntry, GeoTIFFFuzzEntry, ArchiveFuzzEntry,
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

// These targets are always built for libFuzzer; tilepack's own modules are when the
// environment has TILEPACK_SANITIZE=fuzzer (its Package.swift), and its dependencies never are.
let fuzzing: [SwiftSetting] = [.unsafeFlags(["-sanitize=fuzzer,address"])]
let fuzzingLink: [LinkerSetting] = [.unsafeFlags(["-sanitize=fuzzer,address"])]

let package = Package(
    name: "tilepack-fuzz",
    platforms: [.macOS(.v15)],
    products: targets.map { .executable(name: $0.name, targets: [$0.name]) },
    dependencies: [.package(name: "tilepack", path: "..")],
    targets: [
        // LLVMFuzzerRunDriver and the callback that hands each input to a target's entry.
        .target(name: "FuzzDriver", path: "Sources/FuzzDriver", swiftSettings: fuzzing, linkerSettings: fuzzingLink),
    ] + targets.map { t in
        .executableTarget(
            name: t.name,
            dependencies: ["FuzzDriver", .product(name: t.product, package: "tilepack")],
            path: "Sources/\(t.name)",
            swiftSettings: fuzzing,
            linkerSettings: fuzzingLink
        )
    },
    swiftLanguageModes: [.v6]
)
