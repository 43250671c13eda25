"""Shared by the terrain checks of issue 25 (seams, hillshade against gdaldem, band kinds,
compact elevation, overzoom): GDAL's command-line tools as the reference, rasters read into
numpy through GDAL's raw ENVI output (no GDAL Python bindings needed), tiles read straight
out of an MBTiles archive, web-mercator tile math written out here.

Needs Debian's gdal-bin (.ci/run installs it) and numpy/Pillow from checks/requirements.txt.
`run` and `tilepack` are checks/lib/common.py's (a command with a timeout)."""
import io, json, math, os, sqlite3, tempfile

import numpy as np

from checks.lib.common import ROOT, TESTDATA, run, tilepack, tilepack_bin  # noqa: F401  (re-exported)

EARTH_CIRCUMFERENCE = 2 * math.pi * 6378137.0


def __getattr__(name):
    """`T`, the binary, resolved when first asked for (tilepack_bin())."""
    if name == "T":
        return tilepack_bin()
    raise AttributeError(name)


def read_raster(path, bands=None):
    """All (or the listed 1-based) bands of a raster GDAL reads, as float64 (bands, rows, cols),
    with GDAL's nodata as NaN. Goes through `gdal_translate -of ENVI -ot Float64`."""
    info = json.loads(run(["gdalinfo", "-json", path]).stdout)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.bin")
        # BSQ explicitly: ENVI otherwise follows a pixel-interleaved source (BIP), which the
        # (bands, rows, cols) reshape below would scramble.
        cmd = ["gdal_translate", "-q", "-of", "ENVI", "-ot", "Float64", "-co", "INTERLEAVE=BSQ"]
        for b in bands or []:
            cmd += ["-b", str(b)]
        run(cmd + [path, out])
        w, h = info["size"]
        data = np.fromfile(out, dtype="<f8")
        n = len(bands) if bands else len(info["bands"])
        data = data.reshape(n, h, w)
    chosen = [info["bands"][b - 1] for b in bands] if bands else info["bands"]
    for i, b in enumerate(chosen):
        nd = b.get("noDataValue")
        if nd is not None and not (isinstance(nd, str)):
            data[i][data[i] == nd] = np.nan
    return data


def tile_bounds_3857(z, x, y):
    """(west, south, east, north) of XYZ tile z/x/y in EPSG:3857 metres."""
    size = EARTH_CIRCUMFERENCE / (1 << z)
    west = -EARTH_CIRCUMFERENCE / 2 + x * size
    north = EARTH_CIRCUMFERENCE / 2 - y * size
    return west, north - size, west + size, north


def tile_of(lon, lat, z):
    n = 1 << z
    x = int((lon + 180) / 360 * n)
    s = math.sin(math.radians(lat))
    y = int((0.5 - math.log((1 + s) / (1 - s)) / (4 * math.pi)) * n)
    return min(max(x, 0), n - 1), min(max(y, 0), n - 1)


def tile_centre_lat(z, y):
    n = 1 << z
    t = math.pi * (1 - 2 * (y + 0.5) / n)
    return math.degrees(math.atan(math.sinh(t)))


def archive_tiles(path, z=None):
    """{(z, x, y_xyz): blob} of an MBTiles archive's `tiles` (TMS rows flipped to XYZ)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        q = "SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles"
        rows = con.execute(q + (" WHERE zoom_level = ?" if z is not None else ""), (() if z is None else (z,))).fetchall()
    finally:
        con.close()
    return {(zz, x, (1 << zz) - 1 - r): bytes(d) for zz, x, r, d in rows}


def archive_metadata(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return dict(con.execute("SELECT name, value FROM metadata").fetchall())
    finally:
        con.close()


def png_rgba(blob):
    """A PNG tile as a uint8 (rows, cols, 4) array."""
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(blob)).convert("RGBA"))


def tile_grid_metres(src, z, x, y, border=0, out=None, resampling="bilinear"):
    """The source warped onto tile z/x/y's pixels (plus `border` pixels each side) the way a
    build samples it: `gdalwarp -t_srs EPSG:3857 -r bilinear -te <tile bounds> -ts N N`,
    Float32 with nodata -9999999 (outside the source too). Returns (rows, cols) float64 with
    NaN for nodata; with `out` the warped GeoTIFF stays there (for gdaldem)."""
    w, s, e, n = tile_bounds_3857(z, x, y)
    px = (e - w) / 256
    size = 256 + 2 * border
    with tempfile.TemporaryDirectory() as d:
        path = out or os.path.join(d, "tile.tif")
        run(["gdalwarp", "-q", "-overwrite", "-t_srs", "EPSG:3857", "-r", resampling, "-ot", "Float32",
             "-dstnodata", "-9999999", "-te", repr(w - border * px), repr(s - border * px), repr(e + border * px),
             repr(n + border * px), "-ts", str(size), str(size), src, path])
        return read_raster(path)[0]


def gdaldem_hillshade(dem_tif, scale, extra=()):
    """`gdaldem hillshade -az 315 -alt 45 -z 1 -s scale` of a GeoTIFF (plus `extra` options;
    no -az with -multidirectional)
    as a uint8 (rows, cols) array; 0 is gdaldem's nodata (edges and nodata neighbours)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "hs.tif")
        light = [] if "-multidirectional" in extra else ["-az", "315"]  # gdaldem refuses both
        run(["gdaldem", "hillshade", "-q"] + light + ["-alt", "45", "-z", "1", "-s", repr(scale)] + list(extra)
            + [dem_tif, out])
        return np.nan_to_num(read_raster(out)[0], nan=0).astype(np.uint8)


def max_zoom_tiles(archive):
    """(max zoom, {(x, y): RGBA array}) of an archive's PNG tiles at its highest zoom."""
    tiles = archive_tiles(archive)
    z = max(k[0] for k in tiles)
    return z, {(x, y): png_rgba(b) for (zz, x, y), b in tiles.items() if zz == z}


def compose(archives_tiles, z):
    """One RGBA picture of several archives' max-zoom tiles ({(x, y): RGBA} each), later
    ones drawn over earlier ones where opaque. Returns (image, x0, y0) with x0, y0 the
    top-left tile."""
    keys = {k for t in archives_tiles for k in t}
    x0, y0 = min(k[0] for k in keys), min(k[1] for k in keys)
    x1, y1 = max(k[0] for k in keys), max(k[1] for k in keys)
    img = np.zeros(((y1 - y0 + 1) * 256, (x1 - x0 + 1) * 256, 4), dtype=np.uint8)
    for tiles in archives_tiles:
        for (x, y), rgba in tiles.items():
            view = img[(y - y0) * 256:(y - y0 + 1) * 256, (x - x0) * 256:(x - x0 + 1) * 256]
            opaque = rgba[..., 3] > 0
            view[opaque] = rgba[opaque]
    return img, x0, y0


def decode_elevation(encoding, width, height, blob):
    """One `elevation.data` blob as a float32 (height, width) array, decoded from the
    definitions in docs/FORMAT.md (independently of tilepack's Swift decoder):
    f32le-deflate, f32-fpredict-deflate (TIFF predictor 3) and q-planar-deflate."""
    import struct, zlib
    n = width * height
    if encoding == "f32le-deflate":
        return np.frombuffer(zlib.decompress(blob), "<f4").reshape(height, width).copy()
    if encoding == "f32-fpredict-deflate":
        a = np.frombuffer(zlib.decompress(blob), np.uint8).reshape(height, 4 * width)
        a = np.cumsum(a, axis=1, dtype=np.uint64).astype(np.uint8)  # undo the byte deltas (mod 256)
        le = a.reshape(height, 4, width)[:, ::-1, :].transpose(0, 2, 1)  # planes MSB first -> LE bytes
        return np.ascontiguousarray(le).view("<f4").reshape(height, width).copy()
    if encoding != "q-planar-deflate":
        raise ValueError(f"unknown elevation encoding {encoding!r}")
    layout, predictor, nbytes, flags = blob[0], blob[1], blob[2], blob[3]
    step, base, nan_bits = struct.unpack_from("<dii", blob, 4)
    nan = np.array([nan_bits], np.int32).view(np.float32)[0]
    assert layout == 1 and predictor == 1 and nbytes in (0, 1, 2, 4) and flags < 4, "bad q-planar-deflate header"
    if flags & 2:
        return np.full((height, width), nan, np.float32)
    mask_len = (n + 7) // 8 if flags & 1 else 0
    raw = zlib.decompress(blob[20:]) if len(blob) > 20 else b""
    assert len(raw) == mask_len + nbytes * n, "q-planar-deflate stream has the wrong length"
    z = np.zeros(n, np.uint64)
    for k in range(nbytes):
        z |= np.frombuffer(raw, np.uint8, n, mask_len + k * n).astype(np.uint64) << np.uint64(8 * k)
    r = ((z >> np.uint64(1)).astype(np.int64) ^ -(z & np.uint64(1)).astype(np.int64)).reshape(height, width)
    r[0, 0] += base  # the planar predictor's inverse is a 2-D prefix sum seeded with `base`
    q = np.cumsum(np.cumsum(r, axis=0), axis=1)
    q = ((q + (1 << 31)) % (1 << 32)) - (1 << 31)  # integer arithmetic wraps modulo 2^32
    out = (q.astype(np.float64) * step).astype(np.float32)
    if mask_len:
        bits = np.unpackbits(np.frombuffer(raw, np.uint8, mask_len), bitorder="little")[:n].reshape(height, width)
        out[bits == 1] = nan
    return out


def archive_elevation(path, z=None):
    """{(z, x, y_xyz): (encoding, float32 grid)} of an archive's elevation table."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        q = "SELECT zoom_level, tile_column, tile_row, encoding, width, height, data FROM elevation"
        rows = con.execute(q + (" WHERE zoom_level = ?" if z is not None else ""), (() if z is None else (z,))).fetchall()
    finally:
        con.close()
    return {(zz, x, (1 << zz) - 1 - r): (enc, decode_elevation(enc, w, h, bytes(d))) for zz, x, r, enc, w, h, d in rows}


def elevation_bytes(path):
    """Sum of the archive's `elevation.data` lengths."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("SELECT coalesce(sum(length(data)), 0) FROM elevation").fetchone()[0]
    finally:
        con.close()
