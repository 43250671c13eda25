// `import TilePackRuntime` is what an app that shows purchased regions needs: the tile store
// (`TileStore`, `TileLease`, `AccessPolicy`), the region store (`RegionLibrary`,
// `RegionInstaller`, the App Store verifier) and the archive readers, with the tile ids and
// decoders under them. It links none of the GeoTIFF reader, the encoders, the build
// pipeline, the samples or the tools; Scripts/module-closure holds the layering and checks it.
@_exported import TilePackCore
@_exported import TilePackCodec
@_exported import TilePackArchive
@_exported import TilePackStore
@_exported import TilePackRegions
