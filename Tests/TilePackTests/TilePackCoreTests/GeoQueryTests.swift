import Testing
@testable import TilePackCore
import TilePackTestSupport

@Suite("Geo query input")
struct GeoQueryTests {
    @Test func parsesNumbersAndGeoURIs() throws {
        let q = try TileQuery(arguments: ["-33.8568", "151.2153", "15"])
        #expect(q.tile == TileID(z: 15, x: 30147, y: 19662) && q.tmsY == 13105)
        #expect(q.pixel.x >= 0 && q.pixel.x < 256)
        let u = try TileQuery(arguments: ["geo:-33.8568,151.2153;crs=WGS84;u=35", "15"])
        #expect(u.tile == q.tile && u.pixel == q.pixel)
        let uri = try GeoURI("GEO:48.2,16.37,183;u=5;foo=bar")
        #expect(uri.altitude == 183 && uri.uncertainty == 5)
    }

    @Test func rejectsBadInputWithClearMessages() {
        func message(_ args: [String]) -> String? {
            do { _ = try TileQuery(arguments: args); return nil } catch { return "\(error)" }
        }
        #expect(message(["86", "0", "3"])?.contains("web mercator") == true)
        #expect(message(["-85.06", "0", "3"]) != nil)
        #expect(message(["0", "181", "3"])?.contains("longitude") == true)
        #expect(message(["0", "0", "25"])?.contains("zoom 25") == true)
        #expect(message(["0", "0", "-1"]) != nil)
        #expect(message(["0", "0", "3.5"])?.contains("whole number") == true)
        #expect(message(["abc", "0", "3"])?.contains("\"abc\"") == true)
        #expect(message(["nan", "0", "3"]) != nil)
        #expect(message(["0", "0"]) != nil)
        #expect(message(["geo:1,2;crs=nad27", "3"])?.contains("nad27") == true)
        #expect(message(["geo:1", "3"]) != nil)
        #expect(message(["geo:1e1,2", "3"]) != nil)
        #expect(message(["geo:1,2;u=-1", "3"]) != nil)
        #expect(message(["geo:1,2;u=3;crs=wgs84", "3"])?.contains("first") == true)
        #expect(QueryInputError("x").category == .invalidArgument)
    }

    @Test func maxLatitudeItselfIsAccepted() throws {
        let q = try TileQuery(lat: WebMercator.maxLatitude, lon: 180, zoom: 2)
        #expect(q.tile == TileID(z: 2, x: 3, y: 0))
    }
}
