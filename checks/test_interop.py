"""Interoperability of `tilepack build --codec png` and `tilepack query` with GDAL.

    [INTEROP_DATA=TESTDATA_DIR] python3 -m pytest -s checks/test_interop.py   (default ../shared/testdata)

1. Builds rasterio__RGB.byte.tif (UTM 18N, 791×718) into a PNG archive and opens it with GDAL's
   MBTiles driver (through rasterio): its bounds must match the source's.
2. For 1,000 random points inside the source, `tilepack query` at the max zoom must give the
   colour GDAL gets by warping the source to the same web-mercator pixel grid with bilinear
   resampling, within ±8 per channel for at least 99% of the points.
Needs rasterio, mercantile and numpy (the peers of checks/requirements.txt).
"""
import json
import os
import random
import sqlite3
import subprocess

import pytest

from checks.lib.common import TESTDATA, require

pytestmark = [pytest.mark.gdal]

DATA = os.environ.get("INTEROP_DATA", TESTDATA)


@pytest.fixture(scope="module")
def built(tilepack, tmp_path_factory):
    src = os.path.join(DATA, "geotiff", "rasterio__RGB.byte.tif")
    assert os.path.isfile(src), f"{src} not found"
    # A missing tool fails the check (as the script did), never skips it.
    require("rasterio", "mercantile")
    archive = str(tmp_path_factory.mktemp("interop") / "rgb.mbtiles")
    subprocess.run([tilepack, "build", src, "--codec", "png", "-o", archive, "--quiet"], check=True)
    import rasterio
    from rasterio.warp import transform_bounds
    with rasterio.open(src) as s:
        src_ll = transform_bounds(s.crs, "EPSG:4326", *s.bounds, densify_pts=33)
    db = sqlite3.connect(archive)
    md = dict(db.execute("select name, value from metadata"))
    db.close()
    return src, archive, src_ll, int(md["maxzoom"]), [float(v) for v in md["bounds"].split(",")]


def test_gdal_opens_the_archive_and_its_bounds_match_the_sources(built):
    import rasterio
    from rasterio.warp import transform_bounds
    src, archive, src_ll, maxzoom, ours_ll = built
    with rasterio.open(archive) as mb:
        gdal_ll = transform_bounds(mb.crs, "EPSG:4326", *mb.bounds)
        print(f"GDAL opened {os.path.basename(archive)}: driver {mb.driver}, {mb.width}x{mb.height}, bands {mb.count}")
    # GDAL's extent is the bounds snapped outward to the max-zoom pixel grid: allow one pixel there.
    px_deg = 360 / (256 * 2 ** maxzoom)
    worst = max(abs(a - b) for a, b in zip(gdal_ll, src_ll))
    detail = (f"source bounds {['%.5f' % v for v in src_ll]}, archive bounds {['%.5f' % v for v in ours_ll]} (metadata), "
              f"GDAL bounds {['%.5f' % v for v in gdal_ll]} (worst difference {worst:.5f} deg, one z{maxzoom} pixel = {px_deg:.5f} deg)")
    print(detail)
    assert worst <= 1.5 * px_deg and max(abs(a - b) for a, b in zip(ours_ll, src_ll)) <= 1e-4, f"bounds differ: {detail}"


def test_query_colours_agree_with_gdals_bilinear_warp(tilepack, built):
    """1,000 random points: within ±8 per channel of GDAL's warp for ≥ 99 %, ≤ 10 transparent in ours."""
    import mercantile
    import numpy as np
    import rasterio
    from rasterio.transform import from_bounds
    from rasterio.warp import Resampling, reproject, transform
    src, archive, src_ll, maxzoom, _ = built
    with rasterio.open(src) as s:
        src_arr, src_crs, src_tf, src_nodata = s.read(), s.crs, s.transform, s.nodata
    # GDAL's warp of the source onto the max-zoom web-mercator pixel grid (bilinear).
    west, south, east, north = src_ll
    t0, t1 = mercantile.tile(west, north, maxzoom), mercantile.tile(east, south, maxzoom)
    ul, lr = mercantile.xy_bounds(t0), mercantile.xy_bounds(t1)
    w, h = (t1.x - t0.x + 1) * 256, (t1.y - t0.y + 1) * 256
    dst_tf = from_bounds(ul.left, lr.bottom, lr.right, ul.top, w, h)
    dst = np.zeros((3, h, w), dtype=np.uint8)
    for b in range(3):
        reproject(src_arr[b], dst[b], src_transform=src_tf, src_crs=src_crs, dst_transform=dst_tf,
                  dst_crs="EPSG:3857", resampling=Resampling.bilinear, src_nodata=src_nodata, dst_nodata=0)
    valid = (dst != 0).all(axis=0)
    rng = random.Random(1234)
    points, tries = [], 0
    while len(points) < 1000 and tries < 200000:
        tries += 1
        lon, lat = rng.uniform(west, east), rng.uniform(south, north)
        x, y = transform("EPSG:4326", "EPSG:3857", [lon], [lat])
        col, row = int((x[0] - ul.left) / dst_tf.a), int((y[0] - ul.top) / dst_tf.e)
        if 1 <= col < w - 1 and 1 <= row < h - 1 and valid[row - 1:row + 2, col - 1:col + 2].all():
            points.append((lat, lon, dst[:, row, col]))
    within = compared = transparent = worst_diff = 0
    for lat, lon, gdal_rgb in points:
        p = subprocess.run([tilepack, "query", f"{lat:.9f}", f"{lon:.9f}", str(maxzoom), "--archive", archive, "--json"],
                           capture_output=True, text=True)
        assert p.returncode == 0, f"query exited {p.returncode}: {p.stderr.strip()}"
        a = json.loads(p.stdout)
        if not a["present"] or a["rgba"][3] == 0:
            transparent += 1
            continue
        compared += 1
        d = max(abs(int(a["rgba"][i]) - int(gdal_rgb[i])) for i in range(3))
        worst_diff = max(worst_diff, d)
        within += d <= 8
    share = within / max(compared, 1)
    detail = (f"{len(points)} random points inside the data: {compared} compared, {transparent} transparent in ours, "
              f"{within} within ±8 per channel ({share:.2%}), worst channel difference {worst_diff}")
    print(detail)
    assert len(points) >= 1000 and share >= 0.99 and transparent <= 10, f"colours disagree with GDAL: {detail}"
