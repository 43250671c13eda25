// swift-tools-version:6.1
import PackageDescription

// tilepack's benchmarks, a package of their own so the library's build and tests never pay
// for ordo-one/benchmark. Two entry points:
// - `swift package benchmark` runs the ordo-one benchmarks (time, allocations, peak memory);
// - `swift run -c release tilepack-bench …` is the harness the comparison scripts in
//   ../Scripts call to time our side next to a peer (tifffile, rio-mbtiles) in the same run.
let package = Package(
    name: "TilePackBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // Named: a path dependency is otherwise known by its folder name, which differs per clone.
        .package(name: "tilepack", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "TilePackBenchmarks",
            dependencies: [
                .product(name: "TilePack", package: "tilepack"),
                .product(name: "Benchmark", package: "benchmark"),
                "CSQLiteFloor",
            ],
            path: "Benchmarks/TilePackBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The bare SQLite C API, for the floor the tile store is measured against (the root
        // package's CSQLite is not a product, so it cannot be a dependency here).
        .systemLibrary(name: "CSQLiteFloor", path: "Sources/CSQLiteFloor", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        .executableTarget(
            name: "tilepack-bench",
            dependencies: [.product(name: "TilePack", package: "tilepack"), "CSQLiteFloor"],
            path: "Sources/tilepack-bench"
        ),
    ],
    swiftLanguageModes: [.v6]
)
