import TilePackCore

/// The EPSG dataset's parameters (by parameter code) onto ``ProjectionParameters``' fields:
/// one table for every method, so a registry reader needs no per-method knowledge.
extension ProjectionParameters {
    /// What an EPSG parameter code means here.
    enum EPSGParameter {
        case latitudeOfOrigin, centralMeridian, scale, falseEasting, falseNorthing
        case standardParallel1, standardParallel2, azimuth, rectifiedGridAngle
        /// Krovak modified: evaluation point ordinate 1 or 2 (index 0, 1).
        case evaluationPoint(Int)
        /// Krovak modified: C1…C10 (index 0…9).
        case krovakCoefficient(Int)
        case pseudoStandardParallel, latitudeOfFalseOrigin, ellipsoidScale, originHeight, zoneWidth

        /// nil for a code no implemented method reads (the caller reports it).
        /// `hasNaturalOrigin`: the same conversion also gives 8801 (only LCC 1SP variant B
        /// has both a natural and a false origin latitude).
        init?(code: Int, hasNaturalOrigin: Bool) {
            switch code {
            case 8801:  // Latitude of natural origin
                self = .latitudeOfOrigin
            case 8811:  // Latitude of projection centre
                self = .latitudeOfOrigin
            case 8821:  // Latitude of false origin: the origin for 2SP cones, a second latitude for 1SP variant B
                self = hasNaturalOrigin ? .latitudeOfFalseOrigin : .latitudeOfOrigin
            // Longitude of natural origin / projection centre / false origin / origin; initial longitude (zoned TM)
            case 8802, 8812, 8822, 8833, 8830:
                self = .centralMeridian
            case 8805, 8815, 8819:  // Scale factor at natural origin / on initial line / on pseudo standard parallel
                self = .scale
            case 8806, 8816, 8826:  // False easting / easting at projection centre / easting at false origin
                self = .falseEasting
            case 8807, 8817, 8827:  // False northing / northing at projection centre / northing at false origin
                self = .falseNorthing
            case 8823, 8832:  // Latitude of 1st standard parallel / of standard parallel
                self = .standardParallel1
            case 8824:  // Latitude of 2nd standard parallel
                self = .standardParallel2
            case 8813, 1036:  // Azimuth of initial line / co-latitude of cone axis (Krovak)
                self = .azimuth
            case 8814:  // Angle from rectified to skew grid
                self = .rectifiedGridAngle
            case 8818:  // Latitude of pseudo standard parallel
                self = .pseudoStandardParallel
            case 1038:  // Ellipsoid scaling factor
                self = .ellipsoidScale
            case 1039:  // Projection plane origin height
                self = .originHeight
            case 8617, 8618:  // Ordinate 1 / 2 of evaluation point (Krovak modified X0, Y0)
                self = .evaluationPoint(code - 8617)
            case 1026...1035:  // C1…C10 (Krovak modified)
                self = .krovakCoefficient(code - 1026)
            case 8831:  // Zone width (zoned TM)
                self = .zoneWidth
            default:
                return nil
            }
        }
    }

    /// Parameters from the EPSG dataset: `values` maps EPSG parameter codes to values already
    /// converted to degrees (angles), metres (lengths) or unity (scales).
    ///
    /// Cost: O(number of parameters).
    /// - Throws: ``CRSError/invalidValue(key:value:)`` for a non-finite value or a scale ≤ 0,
    ///   ``CRSError/unsupportedCode(key:code:)`` for a parameter no field holds (computing
    ///   without it would draw a wrong map).
    public init(method: ProjectionMethod, epsgParameters values: [Int: Double]) throws(CRSError) {
        self.init(method: method)
        for (code, value) in values.sorted(by: { $0.key < $1.key }) {
            guard value.isFinite else { throw .invalidValue(key: "EPSG parameter \(code)", value: "\(value)") }
            guard let field = EPSGParameter(code: code, hasNaturalOrigin: values[8801] != nil) else {
                throw .unsupportedCode(key: "EPSG parameter of \(method.rawValue)", code: code)
            }
            switch field {
            case .latitudeOfOrigin: latitudeOfOrigin = value
            case .centralMeridian: centralMeridian = value
            case .scale:
                guard value > 0 else { throw .invalidValue(key: "EPSG parameter \(code) (scale)", value: "\(value)") }
                scale = value
            case .falseEasting: falseEasting = value
            case .falseNorthing: falseNorthing = value
            case .standardParallel1: standardParallel1 = value
            case .standardParallel2: standardParallel2 = value
            case .azimuth: azimuth = value
            case .rectifiedGridAngle: rectifiedGridAngle = value
            case .pseudoStandardParallel: pseudoStandardParallel = value
            case .latitudeOfFalseOrigin: latitudeOfFalseOrigin = value
            case .ellipsoidScale: ellipsoidScale = value
            case .originHeight: originHeight = value
            case .evaluationPoint(let i):
                var p = evaluationPoint ?? [.nan, .nan]
                p[i] = value
                evaluationPoint = p
            case .zoneWidth:
                guard value > 0, value <= 360 else {
                    throw .invalidValue(key: "EPSG parameter \(code) (zone width)", value: "\(value)")
                }
                zoneWidth = value
            case .krovakCoefficient(let i):
                var c = krovakCoefficients ?? Array(repeating: .nan, count: 10)
                c[i] = value
                krovakCoefficients = c
            }
        }
        // The modified Krovak's correction is all or nothing: without a term the map is wrong.
        // None at all is proj.db's way (it stores seven parameters and drops the twelve
        // correction terms): then the one correction EPSG defines for these methods applies.
        if (method == .krovakModified || method == .krovakModifiedNorthOrientated)
            && evaluationPoint == nil && krovakCoefficients == nil
        {
            let m = Krovak.Modification.sJTSK05
            evaluationPoint = [m.x0, m.y0]
            krovakCoefficients = [m.c1, m.c2, m.c3, m.c4, m.c5, m.c6, m.c7, m.c8, m.c9, m.c10]
        }
        if method == .krovakModified || method == .krovakModifiedNorthOrientated {
            guard let p = evaluationPoint, p.allSatisfy(\.isFinite) else {
                throw .missingKey("EPSG parameters 8617/8618 (evaluation point) of \(method.rawValue)")
            }
            guard let c = krovakCoefficients, c.allSatisfy(\.isFinite) else {
                throw .missingKey("EPSG parameters 1026…1035 (C1…C10) of \(method.rawValue)")
            }
        }
    }
}
