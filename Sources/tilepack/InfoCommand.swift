import ArgumentParser
import TilePack

/// `tilepack info FILE`: what the reader sees in a TIFF, for humans or as JSON.
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Describe a TIFF/GeoTIFF: size, samples, layout, compression, georeferencing.",
        discussion: """
            Reads the file with tilepack's own TIFF reader. Files it cannot decode are reported \
            on stderr in one line naming the file and the problem, with exit status 2.
            """
    )

    @Argument(help: "The TIFF or GeoTIFF file to describe.")
    var file: String

    @Flag(name: .long, help: "Print one JSON object instead of text.")
    var json = false

    @Flag(name: .long, help: "Also decode every pixel and print SHA-256 digests of the image and of each band.")
    var checksum = false

    func run() throws {
        let info: SourceInfo
        do {
            info = SourceInfo(tiff: try TIFFInfo(file: try TIFFFile(path: file), checksum: checksum))
        } catch {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
        print(json ? try info.json : info.text)
    }
}
