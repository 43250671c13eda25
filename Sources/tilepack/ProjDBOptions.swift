import ArgumentParser
import TilePack
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `--proj-db PATH`: where EPSG codes outside tilepack's built-in table are looked up;
/// shared by `build`, `info` and `project`.
struct ProjDBOptions: ParsableArguments {
    @Option(
        name: .customLong("proj-db"),
        help:
            """
            PROJ's EPSG database (default: $PROJ_DATA, then $PROJ_LIB, then /usr/share/proj/proj.db; without one, \
            the built-in table).
            """
    )
    var projDB: String?

    /// The registry: `--proj-db`, `PROJ_DATA`, `PROJ_LIB`, the system path, else built-in.
    /// A path or variable naming a bad proj.db is an error (printed, exit status by category).
    func registry() throws -> CRSRegistry {
        do {
            return try CRSRegistry.locate(explicitPath: projDB, environment: ProcessInfo.processInfo.environment)
        } catch {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
    }
}
