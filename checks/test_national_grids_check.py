"""Must-show 3 of issue 26: real files in national grids, written by GDAL, build like GDAL warps.

For each grid (EPSG code) two GeoTIFFs are written with GDAL's command-line tools:

  DEM      the real Zurich 25 m DEM (conformance/georust-geotiff__zh_dem_25.tif, int16 metres,
           nodata -9999) given the grid's CRS by `gdal_translate -a_srs EPSG:X -a_ullr …`, 25 m
           pixels (in the grid's units) centred on the middle of the grid's area of use;
  imagery  real Landsat RGB (geotiff/rasterio__RGB.byte.tif, nodata 0 around the scene) placed
           on a ~1° lon/lat box at the same spot (`gdal_translate -a_srs EPSG:4326 -a_ullr`) and
           reprojected into the grid by `gdalwarp -t_srs EPSG:X -r bilinear` (a rotated,
           curved footprint with nodata around it).

Each is built with `tilepack build --codec png` at its native zoom only (--min-zoom =
--max-zoom = `tilepack info`'s native_zoom) and every max-zoom tile is compared with
`gdalwarp -t_srs EPSG:3857 -r bilinear -et 0` of the same file onto the same tile pixels (one
warp over the tiles' union, -te/-ts on the tile grid; -et 0: GDAL's default approximate
transformer moves pixels by up to 1/8 px, which decides edge pixels differently), GDAL choosing
its datum transformation from the same proj.db — except where the archive's
`tilepack:datum_transform` names a grid shift that GDAL would not take (21781: PROJ 9.1 ranks
the Helmert first and looks for CHENyx06 as ch_swisstopo_CHENyx06_ETRS.tif, Debian ships
CHENYX06_etrs.gsb; the issue asks for the grid): then gdalwarp gets PROJ's own pipeline for
that candidate with Debian's file name (`-ct`). Each grid prints the operation used.

  imagery  PSNR over R,G,B of the pixels both sides draw (peak 255), and the alpha masks
           (tilepack's alpha > 0, gdalwarp -dstalpha > 0) identical pixel for pixel;
  DEM      the archive's max-zoom elevations (metres, `elevation` table) against gdalwarp's
           Float32 metres: PSNR with the DEM's range as peak, and the nodata masks identical.

A mask pixel whose exact source position (PROJ, the same operation) lies within 0.01 source
pixel of a source pixel edge is a tie — which pixel contains it is decided by the last bits of
two different computations — and is counted apart (printed, not failed).

Pass: ≥ 45 dB and identical masks for both files of at least 10 grids, and no grid failing
once tilepack accepts its CRS (a grid tilepack declines — "not supported"/"not in tilepack's
CRS table" — is reported, not failed, so the check runs before the registry lands; the count
of ≥ 10 then fails). One test per grid and file; -s prints the operations and a table.

Usage: [NATIONAL_GRIDS=27700,2056,…] [NATIONAL_KEEP=DIR] [NATIONAL_MIN_GRIDS=10] [NATIONAL_WORKERS=2]
       python3 -m pytest -s checks/test_national_grids_check.py
       BIN=path/to/tilepack (default the debug build of this checkout)
"""
import json
import math
import os
import re
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from checks.lib import proj_ctypes
from checks.lib.common import data_root, mse as mean_square, psnr
from checks.lib.terrain import (archive_elevation, archive_metadata, archive_tiles, png_rgba, read_raster, run,
                                tile_bounds_3857, tile_of, tilepack)

pytestmark = [pytest.mark.gdal, pytest.mark.slow, pytest.mark.usefixtures("tilepack")]

GRIDS = [int(c) for c in os.environ["NATIONAL_GRIDS"].split(",")] if os.environ.get("NATIONAL_GRIDS") else \
    [27700, 2056, 21781, 28992, 31467, 31287, 2193, 5070, 3577, 2263, 3006, 3067, 2180, 5514, 2157, 6933]
MIN_GRIDS = int(os.environ.get("NATIONAL_MIN_GRIDS", "10"))
WORKERS = int(os.environ.get("NATIONAL_WORKERS", "2"))
KEEP = os.environ.get("NATIONAL_KEEP") or None


def dem_source():
    return os.path.join(data_root(), "conformance", "georust-geotiff__zh_dem_25.tif")


def rgb_source():
    return os.path.join(data_root(), "geotiff", "rasterio__RGB.byte.tif")


THRESHOLD_DB = 45.0
# Where a grid's area of use is mostly sea or its middle is awkward, a spot inside it on land
# (Greenwich lon, lat). Everything else uses the middle of the area of use.
SPOTS = {6933: (8.5, 47.0), 3577: (134.0, -24.0), 2193: (175.5, -39.5), 27700: (-1.8, 52.5),
         3067: (25.0, 62.0), 3006: (15.0, 60.0), 5070: (-98.0, 39.0)}


def spot(ctx, code):
    """(lon, lat) to place the files at, and the CRS's (x, y) there, and metres per unit."""
    crs = ctx.create(f"EPSG:{code}")
    if code in SPOTS:
        lon, lat = SPOTS[code]
    else:
        w, s, e, n, _ = crs.area_of_use()
        if e < w:
            e += 360
        lon, lat = ((w + e) / 2 + 180) % 360 - 180, (s + n) / 2
    op = ctx.crs_to_crs("EPSG:4326", crs)
    x, y = op.trans([lon], [lat])
    unit = crs.axes()[0][3]
    return lon, lat, float(x[0]), float(y[0]), unit


def write_files(d, code, lon, lat, x, y, unit):
    DEM, RGB = dem_source(), rgb_source()
    dem_path, rgb_path = os.path.join(d, f"dem-{code}.tif"), os.path.join(d, f"rgb-{code}.tif")
    info = json.loads(run(["gdalinfo", "-json", DEM]).stdout)
    w, h = info["size"]
    px = 25.0 / unit
    run(["gdal_translate", "-q", "-a_srs", f"EPSG:{code}", "-a_ullr", repr(x - w * px / 2), repr(y + h * px / 2),
         repr(x + w * px / 2), repr(y - h * px / 2), DEM, dem_path])
    placed = os.path.join(d, f"rgb-{code}-4326.tif")
    dlat = 1.0
    dlon = dlat * 791 / 718 / math.cos(math.radians(lat))
    run(["gdal_translate", "-q", "-a_srs", "EPSG:4326", "-a_ullr", repr(lon - dlon / 2), repr(lat + dlat / 2),
         repr(lon + dlon / 2), repr(lat - dlat / 2), RGB, placed])
    run(["gdalwarp", "-q", "-overwrite", "-t_srs", f"EPSG:{code}", "-r", "bilinear", placed, rgb_path])
    return dem_path, rgb_path


# PROJ 9.1 asks for some grids by names Debian's proj-data does not use (the note).
GRID_ALIASES = {"ch_swisstopo_CHENyx06_ETRS.tif": "CHENYX06_etrs.gsb"}
PROJ_DATA = "/usr/share/proj"


def reference_op(ctx, code, used=None):
    """The operation gdalwarp uses from EPSG:code to EPSG:3857: (None, name) for GDAL's own
    choice, or (pipeline for `-ct`, name) when tilepack's `tilepack:datum_transform` (`used`,
    "NAME [EPSG:…, GRID.gsb, 1 m]") names a grid shift among PROJ's candidates that GDAL would
    not take — for 21781 PROJ 9.1 ranks the Helmert first and looks for the CHENyx06 grid
    under another name than Debian's; the issue asks for the grid there. A Helmert choice is
    never overridden: it must be GDAL's own."""
    ops = ctx.operations(f"EPSG:{code}", "EPSG:3857")
    default = next((op.name() for op in ops if all(g["available"] for g in op.grids())), "?")
    files = set(re.findall(r"[\w.-]+\.(?:gsb|tif|gtx)\b", used.split(" [", 1)[1])) if used and " [" in used else set()
    if not files:
        return None, default
    for op in ops:
        grids = op.grids()
        names = {g["short_name"] for g in grids} | {GRID_ALIASES.get(g["short_name"]) for g in grids} \
            | {os.path.basename(g["full_name"]) for g in grids if g["full_name"]}
        if grids and files <= names:
            if all(g["available"] for g in grids) and op.name() == default:
                return None, default
            pipeline = op.proj_string()
            for g in grids:
                alias = GRID_ALIASES.get(g["short_name"])
                if not g["available"] and alias and os.path.exists(os.path.join(PROJ_DATA, alias)):
                    pipeline = pipeline.replace(f"+grids={g['short_name']}", f"+grids={alias}")
            return pipeline, f"{op.name()} with {', '.join(sorted(files))} (tilepack's; GDAL's default: {default})"
    return None, default


def build(src, out, extra=()):
    """Builds `src` at its native zoom only; (zoom, seconds) or raises with tilepack's error."""
    info = json.loads(tilepack(["info", src, "--json"]).stdout)
    z = info.get("native_zoom")
    if z is None:
        raise RuntimeError(info.get("crs_error") or "tilepack info gave no native zoom")
    t = time.time()
    tilepack(["build", src, "--codec", "png", "--min-zoom", z, "--max-zoom", z, "-o", out, "--quiet", *extra])
    return int(z), time.time() - t


def reference(src, z, keys, out, extra):
    """gdalwarp of `src` onto the union of the tiles `keys` at zoom z with the exact transformer
    (-et 0: GDAL's default approximation moves pixels by up to 1/8 px, which decides edge pixels
    differently): (array (bands, rows, cols), x0, y0)."""
    xs, ys = [k[0] for k in keys], [k[1] for k in keys]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    w, _, _, n = tile_bounds_3857(z, x0, y0)
    _, s, e, _ = tile_bounds_3857(z, x1, y1)
    run(["gdalwarp", "-q", "-overwrite", "-t_srs", "EPSG:3857", "-r", "bilinear", "-et", "0", *extra, "-te", repr(w), repr(s),
         repr(e), repr(n), "-ts", str((x1 - x0 + 1) * 256), str((y1 - y0 + 1) * 256), src, out])
    return read_raster(out), x0, y0


def tiles_around(src, z):
    """Every tile at zoom z the file's lon/lat bounds touch (so a tile tilepack left out but
    GDAL draws counts against it)."""
    info = json.loads(run(["gdalinfo", "-json", src]).stdout)
    ring = info["wgs84Extent"]["coordinates"][0]
    lons, lats = [p[0] for p in ring], [p[1] for p in ring]
    ax, ay = tile_of(min(lons), max(lats), z)
    bx, by = tile_of(max(lons), min(lats), z)
    return [(x, y) for x in range(ax, bx + 1) for y in range(ay, by + 1)]


EDGE_TIE = 0.01  # source pixels: a mask pixel decided this close to a source pixel edge is a tie


def source_positions(ctx, code, ct, src, mx, my):
    """Source (col, row) in pixels of web-mercator points, through PROJ with the operation the
    reference warp used."""
    if ct:
        x, y = ctx.create(ct).trans(mx, my, inverse=True)
    else:
        x, y = ctx.crs_to_crs("EPSG:3857", f"EPSG:{code}").trans(mx, my)
    gt = json.loads(run(["gdalinfo", "-json", src]).stdout)["geoTransform"]
    return (x - gt[0]) / gt[1], (y - gt[3]) / gt[5]


def compare(ctx, code, ct, kind, src, archive, z, d):
    """Our max-zoom tiles against the reference warp. Returns a dict: psnr, peak, rmse, pixels
    compared, tiles, mask pixels differing, of them ties (the exact source position within
    EDGE_TIE px of a source pixel edge, where a rounding decides), the worst tie distance."""
    extra = ["-ct", ct] if ct else []
    if kind == "DEM":
        ours_tiles = {(x, y): g.astype(np.float64) for (zz, x, y), (enc, g) in archive_elevation(archive, z).items()}
        blank = np.full((256, 256), np.nan)
        ref, x0, y0 = reference(src, z, sorted(set(ours_tiles) | set(tiles_around(src, z))), os.path.join(d, "ref.tif"),
                                extra + ["-ot", "Float32", "-dstnodata", "-9999999"])
        ref = ref[0]
        theirs_valid, theirs_vals = np.isfinite(ref), ref[None]
        finite = ref[theirs_valid]
        peak = float(finite.max() - finite.min()) if finite.size else 1.0
    else:
        ours_tiles = {(x, y): png_rgba(b).astype(np.float64) for (zz, x, y), b in archive_tiles(archive, z).items()}
        ours_tiles = {k: np.where(v[..., 3:4] > 0, v, np.nan)[..., :3].transpose(2, 0, 1) for k, v in ours_tiles.items()}
        blank = np.full((3, 256, 256), np.nan)
        ref, x0, y0 = reference(src, z, sorted(set(ours_tiles) | set(tiles_around(src, z))), os.path.join(d, "ref.tif"),
                                extra + ["-dstalpha"])
        ref = np.nan_to_num(ref, nan=0.0)
        theirs_valid, theirs_vals, peak = ref[3] > 0, ref[:3], 255.0
    rows, cols = theirs_valid.shape
    ours = np.full((theirs_vals.shape[0], rows, cols), np.nan)
    for (x, y), v in ours_tiles.items():
        if (y - y0) * 256 >= rows or (x - x0) * 256 >= cols or x < x0 or y < y0:
            continue
        ours[:, (y - y0) * 256:(y - y0 + 1) * 256, (x - x0) * 256:(x - x0 + 1) * 256] = v if v.ndim == 3 else v[None]
    ours_valid = np.isfinite(ours).all(axis=0)
    both = ours_valid & theirs_valid
    p, mse = psnr(ours[:, both].ravel(), theirs_vals[:, both].ravel(), peak), mean_square(ours[:, both].ravel(), theirs_vals[:, both].ravel())
    rr, cc = np.nonzero(ours_valid != theirs_valid)
    ties, worst = 0, 0.0
    if rr.size:
        w, _, e, n = tile_bounds_3857(z, x0, y0)
        px = (e - w) / 256
        col, row = source_positions(ctx, code, ct, src, w + (cc + 0.5) * px, n - (rr + 0.5) * px)
        dist = np.minimum(np.abs(col - np.round(col)), np.abs(row - np.round(row)))
        tie = dist < EDGE_TIE
        ties, worst = int(tie.sum()), float(dist[tie].max()) if tie.any() else 0.0
    return {"psnr": p, "peak": peak, "rmse": math.sqrt(mse) if mse == mse else float("nan"), "pixels": int(both.sum()),
            "tiles": len(ours_tiles), "mask_diff": int(rr.size), "ties": ties, "worst_tie": worst,
            "total": int(theirs_valid.size)}


# How tilepack words a CRS it does not take (today's table, or a method it lacks).
DECLINED = ("unsupported", "not supported", "not in tilepack's crs table", "not implemented", "does not implement",
            "lacks")


def grid(d, code):
    """One grid's files, builds and comparisons (own PROJ context and directory: grids run
    two at a time). Returns (code, name, lon, lat, reference op line, results)."""
    ctx = proj_ctypes.Context()
    gd = os.path.join(d, str(code))
    os.makedirs(gd, exist_ok=True)
    crs_name = ctx.create(f"EPSG:{code}").name()
    ct, op_desc = None, None
    lon, lat, x, y, unit = spot(ctx, code)
    dem, rgb = write_files(gd, code, lon, lat, x, y, unit)
    results = {}
    for kind, src in (("DEM", dem), ("imagery", rgb)):
        out = os.path.join(gd, f"{kind}-{code}.mbtiles")
        try:
            # The DEM's comparison is of its stored metres: no hillshade to draw.
            z, secs = build(src, out, ["--no-hillshade"] if kind == "DEM" else [])
        except RuntimeError as e:
            msg = str(e).splitlines()[-1] if str(e) else "?"
            results[kind] = ("declined" if any(k in msg.lower() for k in DECLINED) else "error", msg)
            continue
        op_used = archive_metadata(out).get("tilepack:datum_transform")
        ct, op_desc = reference_op(ctx, code, op_used)
        r = compare(ctx, code, ct, kind, src, out, z, gd)
        what = (f"elevations {r['psnr']:.2f} dB (RMSE {r['rmse']:.3f} m of {r['peak']:.0f} m)" if kind == "DEM"
                else f"RGB {r['psnr']:.2f} dB")
        mask = "nodata mask" if kind == "DEM" else "alpha"
        untied = r["mask_diff"] - r["ties"]
        detail = (f"z{z} {r['tiles']} tiles, {what} over {r['pixels']} px; {mask} differs at {untied} of {r['total']} px"
                  + (f" (+{r['ties']} edge ties ≤ {r['worst_tie']:.1e} px)" if r["ties"] else "")
                  + f"; build {secs:.1f} s" + (f"; tilepack:datum_transform {op_used}" if op_used else ""))
        results[kind] = ("ok" if r["psnr"] >= THRESHOLD_DB and untied == 0 else "fail", detail, r["psnr"])
    op_line = f"EPSG:{code} → 3857 reference: {'gdalwarp -ct ' if ct else 'gdalwarp: '}{op_desc or reference_op(ctx, code)[1]}"
    ctx.close()
    return code, crs_name, lon, lat, op_line, results

def guarded(d, code):
    try:
        return grid(d, code)
    except (RuntimeError, proj_ctypes.ProjError, KeyError, ValueError) as e:
        err = ("error", f"{type(e).__name__}: {str(e)[-300:]}")
        return code, "?", float("nan"), float("nan"), f"EPSG:{code}", {"DEM": err, "imagery": err}



@pytest.fixture(scope="module")
def grids():
    """{code: (crs name, lon, lat, reference op line, {kind: (verdict, detail[, psnr])})}, grids two at a time."""
    d = KEEP or tempfile.mkdtemp(prefix="checks-national-")
    os.makedirs(d, exist_ok=True)
    t0 = time.time()
    out = {}
    try:
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            for code, crs_name, lon, lat, op_line, results in pool.map(lambda c: guarded(d, c), GRIDS):
                print(f"     {op_line}", flush=True)
                out[code] = (crs_name, lon, lat, op_line, results)
    finally:
        if not KEEP:
            shutil.rmtree(d, ignore_errors=True)
    print("\n| EPSG | grid | DEM elevations PSNR | imagery RGB PSNR |\n|---|---|---:|---:|")
    for code, (name, _, _, _, res) in out.items():
        cell = lambda r: f"{r[2]:.2f} dB" if len(r) > 2 else r[0]  # noqa: E731
        print(f"| {code} | {name} | {cell(res['DEM'])} | {cell(res['imagery'])} |")
    print(f"time: {time.time() - t0:.0f} s")
    return out


@pytest.mark.parametrize("code", GRIDS)
@pytest.mark.parametrize("kind", ["DEM", "imagery"])
def test_national_grid_builds_like_gdalwarp(grids, code, kind):
    """EPSG:{code} {kind}: ≥ 45 dB against gdalwarp and identical masks (a grid tilepack declines is reported, not failed)."""
    crs_name, lon, lat, op_line, results = grids[code]
    label = f"EPSG:{code} {crs_name} (at {lon:.2f}, {lat:.2f}) {kind}"
    if all(r[0] == "declined" for r in results.values()):
        pytest.skip(f"{label}: declined by tilepack: {results['DEM'][1]}")
    assert results[kind][0] == "ok", f"{label}: {results[kind][1]}"


def test_at_least_min_grids_national_grids_pass(grids):
    """at least 10 national grids pass (≥ 45 dB, identical masks)"""
    passed = [c for c, g in grids.items() if all(r[0] == "ok" for r in g[4].values())]
    declined = [c for c, g in grids.items() if all(r[0] == "declined" for r in g[4].values())]
    assert len(passed) >= MIN_GRIDS, f"at least {MIN_GRIDS} national grids pass (≥ {THRESHOLD_DB:g} dB, identical masks): " \
        f"{len(passed)} pass: {', '.join(map(str, passed))}" + (f"; declined: {', '.join(map(str, declined))}" if declined else "")
