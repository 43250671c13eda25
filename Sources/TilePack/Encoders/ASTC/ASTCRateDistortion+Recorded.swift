import TilePackCore

extension ASTCRateDistortion {
    /// The λ a build recorded in its `tilepack:build_options` JSON (`"rdo": "12"`), for work
    /// that re-encodes an archive's tiles as the archive's own (merged shard parents, a pack's
    /// edge tiles). An archive built before `--rdo` existed, or without RDO, records none: off,
    /// as it was built. An unreadable value is off too (the tiles were then not ours to match).
    /// - Cost: one parse of `buildOptions`.
    public static func recorded(inBuildOptions buildOptions: String?) -> ASTCRateDistortion {
        guard let buildOptions, case .object(let options)? = JSONValue(parsing: buildOptions),
            case .string(let text)? = options["rdo"], let lambda = Double(text),
            let rdo = try? ASTCRateDistortion(lambda: lambda)
        else { return .off }
        return rdo
    }
}
