import ArgumentParser
import TilePack

/// `tilepack codec encode`: raw RGBA → PVRTC1 words (Morton order) or ASTC blocks (row-major).
struct CodecEncodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encode",
        abstract: "Encode a raw RGBA image to PVRTC1 words or ASTC blocks.",
        discussion:
            """
            The output holds PVRTC1 words in Morton order or ASTC blocks row by row (raw, no .astc header), ready \
            for glCompressedTexImage2D, Metal or Vulkan. PVRTC sides must be powers of two (at least 8x8 for \
            pvrtc4, 16x8 for pvrtc2); ASTC takes any size.
            """
    )

    @Argument(
        help:
            """
            Input image: a TIFF (8-bit gray, RGB or RGBA; power-of-two sides), or raw RGBA8 rows, top row first, \
            with --size.
            """
    )
    var image: String

    @Option(help: "Size of a raw RGBA input as WIDTHxHEIGHT, e.g. 256x256 (TIFF input carries its own size).")
    var size: String?

    @Option(
        help:
            """
            Format: pvrtc4 (4 bits a pixel), pvrtc2 (2 bits a pixel), astc4x4 (8 bpp), astc6x6 (3.56 bpp) or \
            astc8x8 (2 bpp).
            """
    )
    var format: BlockFormatArgument = .pvrtc(.pvrtc4)

    @Option(
        help:
            """
            Encoder effort: fast (one pass / one block layout) or quality (least-squares refinement; ASTC: \
            several layouts and two-partition search).
            """
    )
    var level: PVRTCEncoder.Level = .quality

    @Option(
        help:
            """
            ASTC only: rate-distortion λ, squared error traded per bit of deflated size, scaled by the \
            image's own error as it is encoded (0, the default here, is off; builds default to \
            \(ASTCRateDistortion.standard)).
            """
    )
    var rdo: Double?

    @Option(name: .shortAndLong, help: "Output file for the words.")
    var output: String

    @Flag(help: "Print PSNR (RGB, alpha, edge band, interior) and encode/decode Mpix/s.")
    var stats = false

    @Option(
        help:
            """
            With --stats: encode and decode this many times and report the fastest runs (the first run includes \
            page faults and cold caches).
            """
    )
    var `repeat` = 1

    func run() throws {
        do {
            let rdo = try rdo.map { try ASTCRateDistortion(lambda: $0) } ?? .off
            if case .pvrtc(let pvrtc) = format, self.rdo != nil {
                throw ASTCRateDistortionError(argument: "--rdo", codec: pvrtc.rawValue)
            }
            try OutputPath.checkDirectory(of: output)
            let input = try CodecIO.loadImage(image, size: size)
            let encode: () throws -> [UInt8]
            let decode: ([UInt8]) throws -> [UInt8]
            var passes: () -> String = { "" }
            switch format {
            case .pvrtc(let pvrtc):
                let encoder = PVRTCEncoder()
                encode = {
                    try encoder.encode(
                        rgba: input.rgba, width: input.width, height: input.height, format: pvrtc, level: level)
                }
                let decoder = PVRTCDecoder()
                decode = { try decoder.decode($0, format: pvrtc, width: input.width, height: input.height) }
                passes = { ", passes \(encoder.passesRun)" }
            case .astc(let astc):
                let encoder = try ASTCEncoder(format: astc)
                encode = {
                    try encoder.encode(
                        rgba: input.rgba, width: input.width, height: input.height, level: level, rdo: rdo)
                }
                let decoder = ASTCDecoder(format: astc)
                decode = { try decoder.decode($0, width: input.width, height: input.height) }
            }
            let clock = ContinuousClock()
            var words: [UInt8] = []
            var encodeTime = Duration.seconds(1e9)
            for _ in 0..<(stats ? max(`repeat`, 1) : 1) {
                encodeTime = min(encodeTime, try clock.measure { words = try encode() })
            }
            try CodecIO.write(words, to: output)
            guard stats else { return }
            var decoded: [UInt8] = []
            var decodeTime = Duration.seconds(1e9)
            for _ in 0..<max(`repeat`, 1) {
                decodeTime = min(decodeTime, try clock.measure { decoded = try decode(words) })
            }
            let quality = ImageQuality.measure(
                reference: input.rgba, decoded: decoded, width: input.width, height: input.height)
            let megapixels = Double(input.width * input.height) / 1e6
            func rate(_ d: Duration) -> String {
                CodecIO.format(megapixels / max(d.inSeconds, 1e-9))
            }
            print("\(format.name) \(level.rawValue) \(input.width)x\(input.height): \(words.count) bytes\(passes())")
            print(
                """
                psnr_rgb \(CodecIO.format(quality.rgb)) dB  psnr_alpha \(CodecIO.format(quality.alpha)) dB  \
                psnr_edge \(CodecIO.format(quality.edge)) dB  psnr_interior \(CodecIO.format(quality.interior)) \
                dB  max_error \(quality.maxErrorRGB)
                """
            )
            print("encode \(rate(encodeTime)) Mpix/s  decode \(rate(decodeTime)) Mpix/s (one thread)")
            if case .astc = format {
                // What a KTX2 tile stores (zlib 6), and the estimate `--rdo` optimises.
                print(
                    "deflate \(try Zlib.deflate(words).count) bytes (rate model \(ASTCEncoder.estimatedDeflateBytes(words)))"
                )
            }
        } catch let error as any TilePackError {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
    }
}
