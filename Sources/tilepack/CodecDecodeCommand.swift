import ArgumentParser
import TilePack

/// `tilepack codec decode`: PVRTC1 words or ASTC blocks → raw RGBA8 or PNG.
struct CodecDecodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Decode PVRTC1 words (Morton order) or ASTC blocks (row-major) to raw RGBA8 or PNG.",
        discussion:
            """
            The output's extension picks the format: .rgba (raw RGBA8 rows, top first) or .png. ASTC takes any \
            size: partial edge blocks are cropped.
            """
    )

    @Argument(help: "Input file holding the PVRTC1 words or ASTC blocks (raw, no .astc header).")
    var input: String

    @Option(
        help:
            """
            Format of the input: pvrtc4, pvrtc2, or astcNxM (astc4x4, astc5x4, astc5x5, astc6x5, astc6x6, \
            astc8x5, astc8x6, astc8x8, astc10x5, astc10x6, astc10x8, astc10x10, astc12x10, astc12x12).
            """
    )
    var format: BlockFormatArgument

    @Option(help: "Texture size as WIDTHxHEIGHT, e.g. 256x256.")
    var size: String

    @Option(name: .shortAndLong, help: "Output file ending in .rgba (raw RGBA8 rows) or .png.")
    var output: String

    @Flag(help: "Print decode Mpix/s.")
    var stats = false

    @Option(
        help: "Decode this many times and report the fastest run (the first run includes page faults and cold caches).")
    var `repeat` = 1

    func run() throws {
        do {
            let png = output.lowercased().hasSuffix(".png")
            guard png || output.lowercased().hasSuffix(".rgba") else {
                throw CodecInputError(description: "\(output): output must end in .rgba or .png")
            }
            let (width, height) = try CodecIO.parseSize(size)
            try OutputPath.checkDirectory(of: output)
            let words = try CodecIO.read(input)
            let decode: ([UInt8]) throws -> [UInt8]
            switch format {
            case .pvrtc(let pvrtc):
                let decoder = PVRTCDecoder()
                decode = { try decoder.decode($0, format: pvrtc, width: width, height: height) }
            case .astc(let astc):
                let decoder = ASTCDecoder(format: astc)
                decode = { try decoder.decode($0, width: width, height: height) }
            }
            var pixels: [UInt8] = []
            var time = Duration.seconds(1e9)
            for _ in 0..<max(`repeat`, 1) {
                time = min(time, try ContinuousClock().measure { pixels = try decode(words) })
            }
            try CodecIO.write(
                png ? try PNGEncoder().encode(rgba: pixels, width: width, height: height) : pixels, to: output)
            if stats {
                print(
                    """
                    decode \(CodecIO.format(Double(width * height) / 1e6 / max(time.inSeconds, 1e-9))) Mpix/s \
                    (one thread)
                    """
                )
            }
        } catch let error as any TilePackError {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
    }
}
