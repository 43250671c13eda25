import Testing
@testable import TilePackCore
@testable import TilePackCodec
@testable import TilePackArchive
@testable import TilePackRender

/// Render's own pieces, without archives: checked frames, the antimeridian, Terrarium
/// elevation, the bitmap font. (Pictures drawn from the sample library under the region
/// store's policy are in the integration tests.)
@Suite("Render: frames, Terrarium, font")
struct RenderFrameTests {
    @Test func badFramesAreUsageErrors() {
        #expect(throws: RenderInputError.self) { try MapFrame(lat: 89, lon: 0, zoom: 3, width: 10, height: 10) }
        #expect(throws: RenderInputError.self) { try MapFrame(lat: 0, lon: 0, zoom: 25, width: 10, height: 10) }
        #expect(throws: RenderInputError.self) { try MapFrame(lat: 0, lon: 0, zoom: 3, width: 0, height: 10) }
        #expect(throws: RenderInputError.self) { try MapFrame(lat: .nan, lon: 0, zoom: 3, width: 10, height: 10) }
        #expect(throws: RenderInputError.self) { try TileID(path: "12/99999/1") }
        #expect(throws: RenderInputError.self) { try TileID(path: "a/b/c") }
        #expect(throws: RenderInputError.self) { try TileID(path: "1/2") }
        #expect(throws: RenderInputError.self) { try TileID(path: "99999999999999999999/0/0") }
        #expect((try? TileID(path: "12/2126/1459")) == TileID(z: 12, x: 2126, y: 1459))
    }

    @Test func framesWrapTheAntimeridianAndStopAtThePoles() throws {
        let frame = try MapFrame(lat: 0, lon: 179.9, zoom: 1, width: 512, height: 512)
        let xs = Set(frame.tiles.map(\.id.x))
        #expect(xs == [0, 1])
        #expect(frame.tiles.allSatisfy { $0.id.y >= 0 && $0.id.y < 2 })
    }

    @Test func terrariumRoundTrips() {
        for m in [-10.5, 0, 1234.25, 4807.75, 8848.0] {
            let (r, g, b) = Terrarium.encode(m)
            #expect(abs(Terrarium.decode(r, g, b) - m) < 1.0 / 256 + 1e-9)
        }
        let grid = ElevationTile(width: 2, height: 2, values: [100, .nan, 2000, 3000])
        let px = Terrarium.rgba(grid, side: 4)
        #expect(px.count == 64 && px[3] == 255 && px[2 * 4 + 3] == 0)
    }

    @Test func fontDrawsKnownGlyphsAndBoxesForUnknown() {
        var image = RGBAImage(width: 40, height: 10, colour: [0, 0, 0, 255])
        image.text("4.99", x: 0, y: 0, colour: [255, 255, 255, 255])
        #expect(image.distinctColours() == 2)
        #expect(BitmapFont.width(of: "4.99") == 23)
        #expect(BitmapFont.rows("é") == BitmapFont.unknown)
        #expect(BitmapFont.rows("a") == BitmapFont.rows("A"))
    }

    /// Attribution and file names print whole: every printable ASCII character (0x20…0x7E) has
    /// a glyph of its own, never the box, and no two upper-case-folded characters share one.
    @Test func fontCoversPrintableASCII() {
        var seen: [[UInt8]: Character] = [:]
        for code in UInt8(0x20)...UInt8(0x7E) {
            let c = Character(Unicode.Scalar(code))
            let rows = BitmapFont.rows(c)
            #expect(rows != BitmapFont.unknown, "\(c) (0x\(String(code, radix: 16))) draws as the box")
            #expect(rows.count == BitmapFont.glyphHeight && rows.allSatisfy { $0 < 1 << BitmapFont.glyphWidth })
            if c.isLowercase { continue }  // drawn as its capital
            if let other = seen[rows] { Issue.record("\(c) and \(other) share a glyph") }
            seen[rows] = c
        }
    }
}
