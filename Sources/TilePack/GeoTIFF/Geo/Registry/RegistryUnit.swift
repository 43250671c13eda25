import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A proj.db `unit_of_measure` row and the conversions the registry needs from it.
///
/// Units tilepack already knows by EPSG code (degree, grad, arc-second, sexagesimal DMS,
/// metre, foot, US survey foot …) convert with their exact definitions (π/200 for a grad,
/// 1200/3937 m for the US survey foot), not proj.db's 16-digit `conv_factor`, which for the
/// degree is one ulp off π/180. Any other unit uses `conv_factor` as proj.db states it, as
/// PROJ does (Clarke's link, Indian yard, German legal metre, parts per million …).
struct RegistryUnit: Sendable, Equatable {
    let authority: String
    let code: String
    let name: String
    /// "length", "angle", "scale" or "time".
    let type: String
    /// SI units (metre, radian, unity) per unit; nil for the sexagesimal encodings.
    let factor: Double?

    var epsgCode: Int? { authority == "EPSG" ? Int(code) : nil }

    /// The angular unit, exact for known EPSG codes; nil for a unit no number scales
    /// (degree-minute-second text forms other than DDD.MMSSsss).
    var angular: AngularUnit? {
        guard type == "angle" else { return nil }
        if let c = epsgCode, let known = AngularUnit.epsg(c) { return known }
        guard let factor, factor > 0, factor.isFinite else { return nil }
        return AngularUnit(name: name, epsg: epsgCode, radians: factor)
    }

    /// The linear unit, exact for known EPSG codes.
    var linear: LinearUnit? {
        guard type == "length" else { return nil }
        if let c = epsgCode, let known = LinearUnit.epsg(c) { return known }
        guard let factor, factor > 0, factor.isFinite else { return nil }
        return LinearUnit(name: name, epsg: epsgCode, metres: factor)
    }

    /// A parameter value in this unit converted to what ``ProjectionParameters`` holds:
    /// degrees for angles, metres for lengths, unity for scales. nil when the unit cannot
    /// convert it (a time, a text-only sexagesimal form).
    func parameterValue(_ value: Double) -> Double? {
        switch type {
        case "angle": angular.map { $0.degrees(value) }
        case "length": linear.map { value * $0.metres }
        case "scale":
            // unity is exactly 1; anything else (parts per million) as stated, as PROJ reads it.
            epsgCode == 9201 ? value : factor.map { value * $0 }
        default: nil
        }
    }
}
