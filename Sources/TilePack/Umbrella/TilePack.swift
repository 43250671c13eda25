// `import TilePack` gives every layer. An app that only shows tiles can import the layers it
// needs instead (TilePackStore brings Core, Codec, SQLite and Archive) and link nothing of the
// GeoTIFF reader/writer, the build pipeline or the sample generator.
@_exported import TilePackCore
@_exported import TilePackSQLite
@_exported import TilePackCodec
@_exported import TilePackEncoders
@_exported import TilePackArchive
@_exported import TilePackGeoTIFF
@_exported import TilePackBuild
@_exported import TilePackStore
@_exported import TilePackRegions
@_exported import TilePackRender
@_exported import TilePackSamples
@_exported import TilePackTools
@_exported import TilePackPublish
