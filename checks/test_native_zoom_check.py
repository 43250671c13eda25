"""The default max zoom on real GeoTIFFs, against PROJ (through GDAL's gdalinfo and gdaltransform).

1. Sources made on a zoom's own pixel grid (rio-tiler web.tif: EPSG:3857 at z8; rasterio shade.tif:
   EPSG:3857 at z14; rasterio world.rgb: EPSG:4326 with z1's pixels at the equator, its centre) have
   that zoom as `info`'s native zoom and are built to it, not one 2x upsampled zoom deeper (as
   before 2026-11-30, when the tile pixel was a sphere's and the source's the ellipsoid's).
2. On every real GeoTIFF of the manifest that GDAL places, `info`'s native zoom is the one PROJ's
   web-mercator metres give, except within 1 % of a zoom's pixel (web mercator's spherical formulas
   are not conformal on the ellipsoid, on which ours measures: up to 0.7 % apart).

    python3 -m pytest checks/test_native_zoom_check.py   (BIN=path/to/tilepack to test another build)
"""
import json
import math
import os
import sqlite3
import subprocess

import pytest

from checks.lib.common import TESTDATA

pytestmark = [pytest.mark.gdal]


# Sources made on a zoom's own pixel grid: two EPSG:3857 rasters at 44–48° N and a global
# EPSG:4326 one whose 0.703125° pixels are z1's at the equator (its centre).
ON_A_ZOOMS_GRID = {"rio-tiler__web.tif": 8, "rasterio__shade.tif": 14, "rasterio__world.rgb.tif": 1}


def mercator_zoom(path):
    """The first zoom whose web-mercator pixel is at or below one source pixel step at the
    source's centre, both in EPSG:3857 metres (GDAL's gdaltransform, i.e. PROJ), and how far that
    step lies from the nearest zoom's pixel (relative); None when GDAL cannot place the file."""
    g = subprocess.run(["gdalinfo", "-json", path], capture_output=True, text=True)
    info = json.loads(g.stdout) if g.returncode == 0 else {}
    if not info.get("geoTransform") or not info.get("coordinateSystem", {}).get("wkt"):
        return None
    w, h = info["size"]
    c, r = w / 2, h / 2
    p = subprocess.run(["gdaltransform", "-t_srs", "EPSG:3857", path], input=f"{c} {r}\n{c + 1} {r}\n{c} {r + 1}\n",
                       capture_output=True, text=True)
    try:
        (x0, y0), (x1, y1), (x2, y2) = [(float(v[0]), float(v[1])) for v in
                                        (line.split() for line in p.stdout.splitlines() if line.strip())]
    except (ValueError, IndexError):  # a message instead of three points: GDAL cannot place it
        return None
    if p.returncode != 0 or not all(map(math.isfinite, (x0, y0, x1, y1, x2, y2))):
        return None
    step = min(math.hypot(x1 - x0, y1 - y0), math.hypot(x2 - x0, y2 - y0))
    world = 2 * math.pi * 6378137 / 256
    # gdaltransform prints 8 decimals: a metre-sized step is known to ~1e-9 of itself.
    zoom = next((z for z in range(25) if world / 2 ** z <= step * (1 + 1e-7)), 24)
    exact = math.log2(world / step)
    return zoom, abs(exact - round(exact)) * math.log(2)


@pytest.mark.parametrize("name", sorted(ON_A_ZOOMS_GRID))
def test_a_source_on_a_zooms_own_grid_is_built_to_that_zoom(tilepack, name, tmp_path):
    """Ours and PROJ agree on the zoom, and the default build stops there (not one zoom deeper,
    every tile 2x upsampled, as before 2026-11-30)."""
    src = os.path.join(TESTDATA, "geotiff", name)
    zoom, off = mercator_zoom(src)
    assert zoom == ON_A_ZOOMS_GRID[name] and off < 1e-6, f"{name}: PROJ puts it at z{zoom}, {off:.2e} off the grid"
    info = json.loads(subprocess.run([tilepack, "info", src, "--json"], capture_output=True, text=True,
                                     check=True).stdout)
    archive = str(tmp_path / "a.mbtiles")
    subprocess.run([tilepack, "build", src, "--codec", "png", "-o", archive, "--quiet"], check=True)
    with sqlite3.connect(archive) as db:
        top = db.execute("select max(zoom_level) from tiles").fetchone()[0]
        meta = dict(db.execute("select name, value from metadata"))
    assert (info["native_zoom"], int(meta["maxzoom"]), top) == (zoom, zoom, zoom), \
        f"{name}: native zoom {info['native_zoom']}, archive maxzoom {meta['maxzoom']}, tiles to z{top}; PROJ: z{zoom}"


def test_native_zoom_agrees_with_proj_on_every_real_geotiff(tilepack):
    """Every real GeoTIFF of the manifest with a CRS: our native zoom is PROJ's mercator one, but
    where the source pixel lies within 1 % of a zoom's (web mercator's spherical formulas are
    not conformal on the ellipsoid, on which ours measures: up to 0.7 % apart)."""
    names = []
    with open(os.path.join(TESTDATA, "manifest.jsonl")) as f:
        for line in f:
            e = json.loads(line)
            if e.get("set") in ("geotiff", "conformance") and e["name"].endswith((".tif", ".tiff")):
                names.append((e["set"], e["name"]))
    compared, disagree = 0, []
    for folder, name in names:
        src = os.path.join(TESTDATA, folder, name)
        placed = mercator_zoom(src)
        if placed is None:
            continue
        zoom, off = placed
        p = subprocess.run([tilepack, "info", src, "--json"], capture_output=True, text=True)
        if p.returncode != 0 or json.loads(p.stdout).get("native_zoom") is None:
            continue
        compared += 1
        ours = json.loads(p.stdout)["native_zoom"]
        if ours != zoom and off > 0.01:
            disagree.append(f"{name}: ours z{ours}, PROJ z{zoom} ({off:.3f} from a zoom's pixel)")
    print(f"{compared} real GeoTIFFs compared")
    assert compared >= 10 and not disagree, "; ".join(disagree)
