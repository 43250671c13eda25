// swift-tools-version:6.0
import PackageDescription

// The library is one SwiftPM module per layer so the compiler keeps the arrows pointing one
// way. The layering (which module may use which, and what the app product must not link) is
// stated once, in Scripts/module-closure, which CI runs; the comments below say what each
// module holds.
let package = Package(
    name: "tilepack",
    // iOS 18 and macOS 15: the first with `Synchronization.Mutex`, which every lock uses.
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "TilePack", targets: ["TilePack"]),
        // What an app that shows purchased regions links: the tile store, the region store and
        // the archive readers, in one import (`import TilePackRuntime`).
        .library(name: "TilePackRuntime", targets: ["TilePackRuntime"]),
        .executable(name: "tilepack", targets: ["TilePackCLI"]),
        // The HTTP server's routes, for Fuzz/ (`fuzz-route`); the CLI links the target directly.
        .library(name: "TilePackServer", targets: ["TilePackServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.0.0"..<"5.0.0"),
        // Load-latency percentiles in the tile store (allocation-free recording).
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        // `tilepack serve` (TilePackServer only: `import TilePack` does not link it).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        // X.509 chains of App Store signed data (TilePackRegions) and the test App Store's CA (TilePackTools).
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.0"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.0"),
        // `tilepack download`'s and `serve`'s store actions' HTTP client (TilePackServer only: an
        // app gives RegionInstaller a PackTransport over URLSession, so the region store links
        // no HTTP stack).
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        // System zlib (Debian: zlib1g-dev). shim.h wraps the init macros Swift cannot import.
        .systemLibrary(
            name: "CZlib",
            path: "Sources/CZlib",
            pkgConfig: "zlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // System SQLite (Debian: libsqlite3-dev). shim.h exposes SQLITE_TRANSIENT.
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // Tile ids, web-mercator math, geo: URIs, errors, zlib, atomic files. No files, SQL or pixels.
        .target(
            name: "TilePackCore",
            dependencies: ["CZlib", .product(name: "Crypto", package: "swift-crypto")],
            path: "Sources/TilePack/Core"
        ),
        // Connections, statements, result codes. Knows nothing of MBTiles.
        .target(name: "TilePackSQLite", dependencies: ["TilePackCore", "CSQLite"], path: "Sources/TilePack/SQLite"),
        // Tile decoders (PVRTC, PNG), the codec names archives record, quality metrics.
        // What an app that shows tiles links; knows nothing of geography.
        .target(name: "TilePackCodec", dependencies: ["TilePackCore"], path: "Sources/TilePack/Codec"),
        // TileCodec: the PVRTC and PNG encoders, for builds (an app that shows tiles omits it).
        .target(name: "TilePackEncoders", dependencies: ["TilePackCore", "TilePackCodec"], path: "Sources/TilePack/Encoders"),
        // MBTiles reader and writer, elevation table. Decodes no pixels, plans no tiles.
        .target(
            name: "TilePackArchive",
            dependencies: ["TilePackCore", "TilePackSQLite", "TilePackCodec"],
            path: "Sources/TilePack/Archive"
        ),
        // TIFF/BigTIFF reading and writing, GeoKeys, CRS, projections. Knows no tiles or archives.
        .target(name: "TilePackGeoTIFF", dependencies: ["TilePackCore", "TilePackSQLite"], path: "Sources/TilePack/GeoTIFF"),
        // Plan, resample, colour, pyramid, the parallel pipeline, RegionBuild.
        .target(
            name: "TilePackBuild",
            dependencies: ["TilePackCore", "TilePackGeoTIFF", "TilePackCodec", "TilePackEncoders", "TilePackArchive"],
            path: "Sources/TilePack/Build"
        ),
        // Reading tiles back: point queries (and the lazy tile store). Asks Archive, never SQL.
        .target(
            name: "TilePackStore",
            dependencies: ["TilePackCore", "TilePackCodec", "TilePackArchive",
                           .product(name: "Histogram", package: "hdrhistogram-swift")],
            path: "Sources/TilePack/Store"
        ),
        // The region store: catalog, signed transactions, entitlement ledger, AccessPolicy, and the
        // App Store signed-data verifier (ES256, x5c chained to pinned roots). Decides what may be
        // shown, never how tiles are stored.
        .target(
            name: "TilePackRegions",
            dependencies: ["TilePackCore", "TilePackSQLite", "TilePackArchive", "TilePackStore",
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "X509", package: "swift-certificates"),
                           .product(name: "SwiftASN1", package: "swift-asn1")],
            path: "Sources/TilePack/Regions"
        ),
        // The app product's one import: re-exports Core, Codec, Archive, Store and Regions.
        .target(
            name: "TilePackRuntime",
            dependencies: ["TilePackCore", "TilePackCodec", "TilePackArchive", "TilePackStore", "TilePackRegions"],
            path: "Sources/TilePack/Runtime"
        ),
        // Apple's side and the bench, never the app's: the test App Store's CA and signer, viewer
        // traces, the cache simulation against Belady and the stress harness. In the umbrella, not in
        // the `TilePackRuntime` product (Scripts/module-closure checks it).
        .target(
            name: "TilePackTools",
            dependencies: ["TilePackCore", "TilePackSQLite", "TilePackArchive", "TilePackStore", "TilePackRegions",
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "X509", package: "swift-certificates"),
                           .product(name: "SwiftASN1", package: "swift-asn1")],
            path: "Sources/TilePack/Tools"
        ),
        // `tilepack pack`: packs cut from the master archives by the signed catalog (edge tiles
        // re-encoded), their signed manifests and deltas. The publisher's side: not in the app.
        .target(
            name: "TilePackPublish",
            dependencies: ["TilePackCore", "TilePackCodec", "TilePackEncoders", "TilePackArchive", "TilePackStore",
                           "TilePackRegions", .product(name: "Crypto", package: "swift-crypto")],
            path: "Sources/TilePack/Publish"
        ),
        // Map pictures from the tile store: compositing, locked-tile drawing, a bitmap font, Terrarium.
        .target(name: "TilePackRender", dependencies: ["TilePackCore", "TilePackCodec", "TilePackArchive", "TilePackStore"], path: "Sources/TilePack/Render"),
        // `tilepack serve`: HTTP routes over the tile and region stores, the viewer page, error →
        // status mapping. Outside the umbrella: a library user does not link an HTTP server.
        .target(
            name: "TilePackServer",
            dependencies: ["TilePackCore", "TilePackCodec", "TilePackArchive", "TilePackStore", "TilePackRegions",
                           "TilePackRender", "TilePackEncoders", .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "HTTPTypes", package: "swift-http-types"),
                           .product(name: "AsyncHTTPClient", package: "async-http-client")],
            path: "Sources/TilePack/Server"
        ),
        // The deterministic synthetic Mont Blanc terrain behind SampleRegions/.
        .target(name: "TilePackSamples", dependencies: ["TilePackCore", "TilePackGeoTIFF"], path: "Sources/TilePack/Samples"),
        // The umbrella: `import TilePack` re-exports every layer.
        .target(
            name: "TilePack",
            dependencies: [
                "TilePackCore", "TilePackSQLite", "TilePackCodec", "TilePackEncoders", "TilePackArchive",
                "TilePackGeoTIFF", "TilePackBuild", "TilePackStore", "TilePackRegions", "TilePackRender", "TilePackSamples", "TilePackTools", "TilePackPublish",
            ],
            path: "Sources/TilePack/Umbrella"
        ),
        .executableTarget(
            name: "TilePackCLI",
            dependencies: [
                "TilePack", "TilePackServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/tilepack"
        ),
        // The tests mirror the modules (issue 28): one test target per library module, in
        // Tests/TilePackTests/<Module>Tests, depending on that module and the modules it may use
        // (Scripts/module-closure checks it), plus TilePackTestSupport, the fixtures they share
        // (scratch directories, crafted TIFFs, test archives and sources, the region store's
        // fixtures, the sample library, the SampleRegions and ../shared/testdata locators, the
        // `concurrent` tag). Tests that cross layers are TilePackIntegrationTests.
        .target(
            name: "TilePackTestSupport",
            dependencies: ["TilePackCore", "TilePackSQLite", "TilePackCodec", "TilePackEncoders", "TilePackArchive",
                           "TilePackGeoTIFF", "TilePackBuild", "TilePackStore", "TilePackRegions", "TilePackTools",
                           .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/TilePackTests/TilePackTestSupport"
        ),
        .testTarget(
            name: "TilePackCoreTests",
            dependencies: ["TilePackCore", "TilePackTestSupport"],
            path: "Tests/TilePackTests/TilePackCoreTests"
        ),
        .testTarget(
            name: "TilePackSQLiteTests",
            dependencies: ["TilePackSQLite", "TilePackCore", "TilePackTestSupport"],
            path: "Tests/TilePackTests/TilePackSQLiteTests"
        ),
        .testTarget(
            name: "TilePackCodecTests",
            dependencies: ["TilePackCodec", "TilePackCore", "TilePackTestSupport",
                           .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/TilePackTests/TilePackCodecTests"
        ),
        .testTarget(
            name: "TilePackEncodersTests",
            dependencies: ["TilePackEncoders", "TilePackCodec", "TilePackCore", "TilePackTestSupport"],
            path: "Tests/TilePackTests/TilePackEncodersTests"
        ),
        .testTarget(
            name: "TilePackGeoTIFFTests",
            dependencies: ["TilePackGeoTIFF", "TilePackSQLite", "TilePackCore", "TilePackTestSupport",
                           .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/TilePackTests/TilePackGeoTIFFTests"
        ),
        .testTarget(
            name: "TilePackArchiveTests",
            dependencies: ["TilePackArchive", "TilePackCodec", "TilePackSQLite", "TilePackCore", "TilePackTestSupport",
                           .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/TilePackTests/TilePackArchiveTests"
        ),
        .testTarget(
            name: "TilePackBuildTests",
            dependencies: ["TilePackBuild", "TilePackArchive", "TilePackEncoders", "TilePackCodec", "TilePackGeoTIFF",
                           "TilePackSQLite", "TilePackCore", "TilePackTestSupport"],
            path: "Tests/TilePackTests/TilePackBuildTests"
        ),
        // The tile store's tests replay viewer traces (TilePackTools' AccessTrace).
        .testTarget(
            name: "TilePackStoreTests",
            dependencies: ["TilePackStore", "TilePackArchive", "TilePackCodec", "TilePackSQLite", "TilePackCore",
                           "TilePackTools", "TilePackTestSupport"],
            path: "Tests/TilePackTests/TilePackStoreTests"
        ),
        // The region store's tests sell at the test App Store (TilePackTools) and encode a few tiles.
        .testTarget(
            name: "TilePackRegionsTests",
            dependencies: ["TilePackRegions", "TilePackStore", "TilePackArchive", "TilePackSQLite", "TilePackCore",
                           "TilePackTools", "TilePackEncoders", "TilePackTestSupport",
                           .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/TilePackTests/TilePackRegionsTests"
        ),
        .testTarget(
            name: "TilePackToolsTests",
            dependencies: ["TilePackTools", "TilePackStore", "TilePackArchive", "TilePackCore", "TilePackTestSupport"],
            path: "Tests/TilePackTests/TilePackToolsTests"
        ),
        // The publisher's and the server's tests sell at the test App Store too.
        .testTarget(
            name: "TilePackPublishTests",
            dependencies: ["TilePackPublish", "TilePackRegions", "TilePackStore", "TilePackArchive", "TilePackCodec",
                           "TilePackSQLite", "TilePackCore", "TilePackTools", "TilePackTestSupport"],
            path: "Tests/TilePackTests/TilePackPublishTests"
        ),
        .testTarget(
            name: "TilePackServerTests",
            dependencies: ["TilePackServer", "TilePackRender", "TilePackRegions", "TilePackStore", "TilePackArchive",
                           "TilePackEncoders", "TilePackCodec", "TilePackSQLite", "TilePackCore", "TilePackTools",
                           "TilePackTestSupport", .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "HummingbirdTesting", package: "hummingbird"),
                           .product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Tests/TilePackTests/TilePackServerTests"
        ),
        .testTarget(
            name: "TilePackRenderTests",
            dependencies: ["TilePackRender", "TilePackCore", "TilePackCodec", "TilePackArchive", "TilePackTestSupport"],
            path: "Tests/TilePackTests/TilePackRenderTests"
        ),
        .testTarget(
            name: "TilePackSamplesTests",
            dependencies: ["TilePackSamples", "TilePackGeoTIFF", "TilePackTestSupport"],
            path: "Tests/TilePackTests/TilePackSamplesTests"
        ),
        // The CLI's parsing and validation in-process (`@testable import` of the executable target).
        .testTarget(
            name: "TilePackCLITests",
            dependencies: ["TilePackCLI", "TilePackRegions", "TilePackTools", "TilePackTestSupport",
                           .product(name: "ArgumentParser", package: "swift-argument-parser"),
                           .product(name: "Crypto", package: "swift-crypto")],
            path: "Tests/TilePackTests/TilePackCLITests"
        ),
        // The tests that cross layers: end-to-end builds, fuzzing several readers, the built binary,
        // tests over several layers at once (a renderer under the region store's policy, a reader
        // against the sample terrain, codec choice from archive metadata). Under Tests/TilePackTests
        // itself, the other test targets' folders excluded.
        .testTarget(
            name: "TilePackIntegrationTests",
            dependencies: ["TilePack", "TilePackServer", "TilePackCLI", "TilePackTestSupport",
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "HummingbirdTesting", package: "hummingbird"),
                           .product(name: "HTTPTypes", package: "swift-http-types")],
            path: "Tests/TilePackTests",
            exclude: ["TilePackTestSupport", "TilePackCoreTests", "TilePackSQLiteTests", "TilePackCodecTests",
                      "TilePackEncodersTests", "TilePackGeoTIFFTests", "TilePackArchiveTests", "TilePackBuildTests",
                      "TilePackStoreTests", "TilePackRegionsTests", "TilePackToolsTests", "TilePackPublishTests",
                      "TilePackServerTests", "TilePackCLITests", "TilePackRenderTests", "TilePackSamplesTests"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// `TILEPACK_OPTIMIZE=1` compiles the codec modules optimized, asserts kept (`-O -assert-config
// Debug`), in a debug build: .ci/run's checks run the debug binary, and its ASTC encoder at -Onone
// is 100–200× slower (a default build of SampleRegions/montblanc-color.tif: 111 s against 1.1 s
// with all modules optimized, 2.7 s with these two), which was most of the checks' time. ~35 s
// of compiling over the `swift test` build. Never in the shipped manifest: unsafe flags would
// bar the package from being another package's dependency. Not with a sanitizer (its own flags).
let optimizedInChecks: Set = ["TilePackEncoders", "TilePackCodec"]
/// Optimized with asserts kept: the checks' codecs (above) and the library under ASan (below).
let optimizedKeepingAsserts = ["-O", "-assert-config", "Debug"]
if Context.environment["TILEPACK_OPTIMIZE"] == "1", Context.environment["TILEPACK_SANITIZE"] == nil {
    for target in package.targets where optimizedInChecks.contains(target.name) {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(optimizedKeepingAsserts)]
    }
}

// `TILEPACK_SANITIZE=address` (or `thread`) instruments tilepack's own modules, not its
// dependencies nor its test targets: .ci/run's sanitizer steps then rebuild only the library
// and CLI modules over the `swift test` build instead of everything (SwiftPM's `--sanitize`
// rebuilds every dependency with it). The runtime still checks every allocation (ASan) and
// every lock (TSan) process-wide; what it does not see is an access made by test code itself
// (a race between two of a test's own tasks). The full `swift test --sanitize=…` runs, every
// module instrumented, are documented in docs/SANITIZERS.md.
/// Under ASan, the modules whose loops run per pixel or per byte are optimized, asserts kept
/// (clang's ASan guide advises -O1 or more): the whole suite runs in ~105 s instead of ~475.
/// The others (stores, server, regions, archives, CLI) stay at -Onone: with every module
/// optimized (and the test targets instrumented) the step took 334 s to build and 73 s to run,
/// now ~150 s and ~105 s (BENCHMARKS.md "CI time").
let optimizedUnderASan: Set = [
    "TilePackCore", "TilePackCodec", "TilePackEncoders", "TilePackGeoTIFF", "TilePackBuild", "TilePackRender",
    "TilePackSamples",
]
if let sanitizer = Context.environment["TILEPACK_SANITIZE"], ["address", "thread", "fuzzer"].contains(sanitizer) {
    for target in package.targets where target.type != .system {
        // `fuzzer`: libFuzzer's coverage compiled in with ASan, linked with ASan alone, so the
        // test binary keeps its own main and Fuzz/ (built over the same scratch path) links
        // libFuzzer; ASan's runtime has the coverage hooks' no-op defaults.
        let compile = sanitizer == "fuzzer" ? "-sanitize=fuzzer,address" : "-sanitize=\(sanitizer)"
        let link = sanitizer == "fuzzer" ? "-sanitize=address" : "-sanitize=\(sanitizer)"
        // Test targets keep the flags `swift test` built them with, so they are not compiled
        // again (~80 s of TSan's build on 2 cores); they link the runtime.
        if target.type != .test {
            let optimize = sanitizer == "address" && optimizedUnderASan.contains(target.name) ? optimizedKeepingAsserts : []
            target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags([compile] + optimize)]
        }
        target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags([link])]
    }
}
