// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "tilepack",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "TilePack", targets: ["TilePack"]),
        .executable(name: "tilepack", targets: ["TilePackCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.0.0"..<"5.0.0"),
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
        .target(
            name: "TilePack",
            dependencies: [
                "CZlib",
                "CSQLite",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "TilePackCLI",
            dependencies: [
                "TilePack",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/tilepack"
        ),
        .testTarget(
            name: "TilePackTests",
            dependencies: ["TilePack", .product(name: "Crypto", package: "swift-crypto")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
