/// The version of tilepack, in one place: `tilepack --version` prints it and every archive
/// records the version that wrote it (`tilepack:version`). Tiles never carry it, so a new
/// release that encodes the same pixels stores the same tile bytes.
public enum TilePackVersion {
    public static let current = "0.1.0"
}
