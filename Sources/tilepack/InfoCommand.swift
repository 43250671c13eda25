import ArgumentParser
import TilePack

/// `tilepack info FILE`: what the reader sees in a TIFF, for humans or as JSON.
struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Describe a TIFF/GeoTIFF (size, samples, layout, compression, georeferencing) or a mosaic.",
        discussion: """
            Reads the file with tilepack's own TIFF reader. Files it cannot decode are reported \
            on stderr in one line naming the file and the problem, with exit status 2. Several \
            files, a folder or a .vrt are described as the mosaic `tilepack build` would read: \
            union bounds, resolution, CRS(es) and the files.
            """
    )

    @Argument(help: "The TIFF or GeoTIFF file to describe; or several, a folder, or a .vrt (a mosaic).")
    var files: [String]

    @Flag(name: .long, help: "Print one JSON object instead of text.")
    var json = false

    @Flag(name: .long, help: "Also decode every pixel and print SHA-256 digests of the image and of each band.")
    var checksum = false

    func validate() throws {
        if files.isEmpty { throw ValidationError("give a TIFF, several, a folder or a .vrt") }
    }

    func run() throws {
        let info: SourceInfo
        do {
            let input = try RegionInput.resolve(files)
            guard case .file(let file) = input else {
                if checksum { throw ValidationError("--checksum describes one file, not a mosaic") }
                let mosaic = try MosaicInfo(input: input)
                print(json ? try mosaic.json : mosaic.text)
                return
            }
            info = SourceInfo(tiff: try TIFFInfo(file: try TIFFFile(path: file), checksum: checksum))
        } catch let error as any TilePackError {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
        print(json ? try info.json : info.text)
    }
}
