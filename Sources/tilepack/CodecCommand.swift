import ArgumentParser
import TilePack
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `tilepack codec …`: encode and decode single images with the tile codecs.
struct CodecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "codec",
        abstract: "Encode or decode one image with the PVRTC1 or ASTC codec.",
        subcommands: [CodecEncodeCommand.self, CodecDecodeCommand.self]
    )
}

/// Bad command-line input the library does not see (file names, sizes).
struct CodecInputError: TilePackError {
    struct Code: TilePackErrorCode {
        var description: String { "invalidInput" }
    }
    let code = Code()
    let subject = ""
    /// The whole line (it names the option or file itself).
    let detail: String
    var cause: (any Error)? { nil }

    init(description: String) { self.detail = description }
}

enum CodecIO {
    /// Parses `WxH` (e.g. `256x256`).
    static func parseSize(_ text: String) throws(CodecInputError) -> (width: Int, height: Int) {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0,
            w <= PVRTCFormat.maximumSide, h <= PVRTCFormat.maximumSide
        else {
            throw CodecInputError(
                description:
                    "--size '\(text)': expected WIDTHxHEIGHT with sides 1…\(PVRTCFormat.maximumSide), e.g. 256x256")
        }
        return (w, h)
    }

    /// The whole of `path` (at most ``maxInputBytes``), through the checks every input gets
    /// (a regular file, never a FIFO waited on; a missing file is exit 2).
    static func read(_ path: String) throws(InputFileError) -> [UInt8] {
        try RegionFiles.contents(path: path, limit: maxInputBytes)
    }

    /// The largest file `codec decode` reads: a 16384² PVRTC2 texture is 64 MiB.
    static let maxInputBytes = 256 << 20

    static func write(_ bytes: [UInt8], to path: String) throws(CodecInputError) {
        do {
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        } catch {
            throw CodecInputError(description: "\(path): cannot write (\(error))")
        }
    }

    /// Loads the image to encode as RGBA8 rows: a TIFF (8-bit gray/RGB/RGBA) when no
    /// `--size` is given, raw RGBA rows otherwise.
    static func loadImage(_ path: String, size: String?) throws -> (rgba: [UInt8], width: Int, height: Int) {
        guard let size else {
            let tiff = try TIFFFile(path: path)
            return (try tiff.readRGBA8(), tiff.image.width, tiff.image.height)
        }
        let (width, height) = try parseSize(size)
        let bytes = try read(path)
        guard bytes.count == width * height * 4 else {
            throw CodecInputError(
                description:
                    "\(path): \(bytes.count) bytes is not \(width)x\(height) RGBA (\(width * height * 4) bytes)")
        }
        return (bytes, width, height)
    }

    static func format(_ value: Double) -> String {
        if value.isInfinite { return "inf" }
        let scaled = (value * 100).rounded() / 100
        return String(scaled)
    }
}

extension PVRTCFormat: ExpressibleByArgument {}
extension ASTCFormat: ExpressibleByArgument {}

/// A block format on the command line: pvrtc4, pvrtc2 or astcNxM.
enum BlockFormatArgument: ExpressibleByArgument {
    case pvrtc(PVRTCFormat)
    case astc(ASTCFormat)

    init?(argument: String) {
        if let format = PVRTCFormat(rawValue: argument.lowercased()) {
            self = .pvrtc(format)
        } else if let format = ASTCFormat(rawValue: argument.lowercased()) {
            self = .astc(format)
        } else {
            return nil
        }
    }

    var name: String {
        switch self {
        case .pvrtc(let format): format.rawValue
        case .astc(let format): format.rawValue
        }
    }

    static var allValueStrings: [String] {
        PVRTCFormat.allCases.map(\.rawValue) + ASTCFormat.allCases.map(\.rawValue)
    }
}
extension PVRTCEncoder.Level: ExpressibleByArgument {}
