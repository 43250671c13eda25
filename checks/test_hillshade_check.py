"""Must-show 3 of issue 25: `tilepack build --color hillshade` equals `gdaldem hillshade`.

For the max-zoom tiles of three real DEMs (rio-rgbify's elev.tif, EPSG:3857; the Zurich
25 m DEM assigned EPSG:21781 and gdalwarped to EPSG:3857; GTOPO30 around Bonn, assigned
EPSG:4326), each tile is compared with GDAL's own hillshade of the same pixels:

    gdalwarp -t_srs EPSG:3857 -r bilinear -te <tile bounds + 1 px> -ts 258 258 SRC t.tif
    gdaldem hillshade -az 315 -alt 45 -z 1 -s cos(latitude of the tile centre) t.tif

`-s` is gdaldem's horizontal units per vertical unit: a web-mercator metre is cos φ ground
metres, so -s cos φ makes gdaldem's slopes ground slopes (tilepack uses the ground pixel size
of each row). The warp has a 1-pixel border so gdaldem sees the neighbours tilepack's bordered
grid sees; pixels gdaldem leaves nodata (0: next to nodata) and transparent tile pixels are
left out. Pass: mean absolute difference under 2 grey levels on every tile with 1000 or more
compared pixels. The same with --multidirectional against gdaldem -multidirectional on elev.tif.

Usage: python3 -m pytest checks/test_hillshade_check.py   (BIN=path/to/tilepack to test another binary)
"""
import math
import os
import tempfile
import time

import numpy as np
import pytest

from checks.lib.terrain import gdaldem_hillshade, max_zoom_tiles, run, tile_centre_lat, tile_grid_metres, tilepack

pytestmark = [pytest.mark.gdal, pytest.mark.usefixtures("tilepack")]


def compare(name, src, archive, extra=()):
    z, tiles = max_zoom_tiles(archive)
    mads, pixels, worst, greys = [], 0, 0, []
    with tempfile.TemporaryDirectory(prefix="tint-hs-") as d:
        for (x, y), rgba in sorted(tiles.items()):
            warped = os.path.join(d, "t.tif")
            tile_grid_metres(src, z, x, y, border=1, out=warped)
            ref = gdaldem_hillshade(warped, math.cos(math.radians(tile_centre_lat(z, y))), extra)[1:-1, 1:-1]
            ok = (rgba[..., 3] == 255) & (ref > 0)
            n = int(ok.sum())
            if n < 1000:
                continue
            diff = np.abs(rgba[..., 0].astype(int) - ref.astype(int))[ok]
            mads.append(diff.mean())
            greys.append(rgba[..., 0][ok])
            pixels += n
            worst = max(worst, int(np.percentile(diff, 99)))
    assert mads, f"{name}: no tile with 1000 compared pixels"
    g = np.concatenate(greys)
    assert max(mads) < 2, (f"{name}: mean |tilepack − gdaldem| < 2 grey levels on every max-zoom tile: "
                           f"z{z}, {len(mads)} tiles, {pixels} px, per-tile MAD mean {np.mean(mads):.3f} max {max(mads):.3f}, "
                  f"99th pct |diff| ≤ {worst}; tilepack greys {g.min()}…{g.max()}, sd {g.std():.1f}")


@pytest.fixture(scope="module")
def sources(testdata, tmp_path_factory):
    d = str(tmp_path_factory.mktemp("tint-hillshade"))
    elev = os.path.join(testdata, "geotiff", "rio-rgbify__elev.tif")
    zh = os.path.join(d, "zh-3857.tif")
    run(["gdal_translate", "-q", "-a_srs", "EPSG:21781",
         os.path.join(testdata, "conformance", "georust-geotiff__zh_dem_25.tif"), os.path.join(d, "zh-21781.tif")])
    run(["gdalwarp", "-q", "-t_srs", "EPSG:3857", "-r", "bilinear", os.path.join(d, "zh-21781.tif"), zh])
    bonn = os.path.join(d, "bonn-4326.tif")
    run(["gdal_translate", "-q", "-a_srs", "EPSG:4326",
         os.path.join(testdata, "conformance", "wradlib-data__bonn_gtopo.tif"), bonn])
    return d, {"elev": elev, "zh": zh, "bonn": bonn}


CASES = [("elev.tif (float32, EPSG:3857)", "elev", [], []),
         ("Zurich DEM (int16, EPSG:21781 → 3857)", "zh", [], []),
         ("GTOPO30 Bonn (int16, EPSG:4326)", "bonn", [], []),
         ("elev.tif -multidirectional", "elev", ["--multidirectional"], ["-multidirectional"])]


@pytest.mark.parametrize("i, name, src, opts, extra", [(i,) + c for i, c in enumerate(CASES)], ids=[c[0] for c in CASES])
def test_hillshade_matches_gdaldem(sources, i, name, src, opts, extra):
    """mean |tilepack − gdaldem| < 2 grey levels on every max-zoom tile"""
    d, srcs = sources
    t0 = time.time()
    out = os.path.join(d, f"{i}.mbtiles")
    tilepack(["build", srcs[src], "-o", out, "--color", "hillshade", "--codec", "png", "--quiet"] + opts)
    compare(name, srcs[src], out, extra)
    print(f"     ({time.time() - t0:.1f} s)", flush=True)
