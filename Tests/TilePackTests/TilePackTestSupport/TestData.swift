import Crypto
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the tests find the repository's files: SampleRegions/, Fuzz/ and ../shared/testdata
/// beside the repository. This file is Tests/TilePackTests/TilePackTestSupport/TestData.swift,
/// four levels below the repository root.
package enum TestData {
    /// The repository's root directory.
    package static let repository: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The repository's SampleRegions directory.
    package static var sampleRegions: String { repository + "/SampleRegions" }

    /// The repository's Fuzz package.
    package static var fuzzDirectory: URL { URL(fileURLWithPath: repository).appendingPathComponent("Fuzz") }

    /// `../shared/testdata/<name>` beside the repository.
    package static func shared(_ name: String) -> String {
        URL(fileURLWithPath: repository).deletingLastPathComponent().appendingPathComponent("shared/testdata/" + name)
            .path
    }

    /// Apple's App Store Server Library vectors: ../shared/testdata/appstore beside the
    /// repository, or `$TILEPACK_TESTDATA/appstore` when that is set.
    package static let appStoreVectors: String = {
        if let root = ProcessInfo.processInfo.environment["TILEPACK_TESTDATA"], !root.isEmpty {
            if FileManager.default.fileExists(atPath: root + "/appstore") { return root + "/appstore" }
            return root
        }
        return shared("appstore")
    }()

    /// The bytes of `relative` in ``appStoreVectors``.
    package static func appStoreVector(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: appStoreVectors + "/" + relative)))
    }
}

/// PROJ's data as Debian installs it (proj-data): datum grids and proj.db.
package enum ProjData {
    package static let projDB = "/usr/share/proj/proj.db"
    package static let projDir = "/usr/share/proj"
    package static var haveProjData: Bool {
        access(projDB, R_OK) == 0 && access(projDir + "/BETA2007.gsb", R_OK) == 0
    }
}

/// Lower-case hex of the SHA-256 of `bytes`.
package func sha256Hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    return String(SHA256.hash(data: bytes).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
}

/// The 16-byte ASTC block at `offset` as its two little-endian 64-bit halves (bits 0–63, 64–127).
package func astcBlockHalves(_ bytes: [UInt8], at offset: Int) -> (lo: UInt64, hi: UInt64) {
    let lo = bytes[offset..<offset + 8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    let hi = bytes[offset + 8..<offset + 16].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    return (lo, hi)
}

/// The error of type `E` that `body` throws, recording an issue (at the caller) when it throws
/// none or another: `#expect(thrown(LedgerError.self) { … }?.kind == .storage)`.
package func thrown<E: Error, R>(
    _ type: E.Type, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> R
) -> E? {
    #expect(throws: type, sourceLocation: sourceLocation, performing: body)
}
