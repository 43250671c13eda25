"""Mosaics (issue 14) against the uncut file and against GDAL.

    [MOSAIC_DATA=TESTDATA_DIR] [MOSAIC_SKIP_400=1] [RAGGED=1] python3 -m pytest -s checks/test_mosaic_check.py
    (default ../shared/testdata)

1. A real DEM (rio-rgbify__elev.tif, 512×512 float32, EPSG:3857) is cut with rasterio into 4
   non-overlapping pieces off the tile grid (at 2/5 of the width, 3/5 of the height). Building
   the 4 pieces, their folder and a `gdalbuildvrt` VRT over them must give every tile of the
   uncut build: PNG tiles byte for byte (colours within 0) and elevation grids bit for bit;
   `tilepack query --json` at 300 points, 200 of them on the seams, must answer as the uncut
   build does.
2. Two UTM zones: a synthetic DEM sampled from one terrain function on a zone-32 grid west of
   12°E and a zone-33 grid east of it (20 m pixels). Our mosaic of the two files against GDAL's
   `gdalwarp -r bilinear -t_srs EPSG:3857` of the same two files (gdalbuildvrt cannot put two
   CRSs in one VRT) on the max-zoom tile grid: PSNR of the elevations in the band within 8
   output pixels of the seam must be within 0.5 dB of the PSNR elsewhere. Each zone's file is a
   full rectangle of its own grid, so they overlap in a sliver and the seam is the zone-33
   file's west edge (it is listed last). RAGGED=1 instead cuts both at exactly 12°E with nodata
   beyond (a staircase edge in each file).
3. 400 files of 64×64 pixels: the build's peak RSS (/usr/bin/time -v) under 256 MiB and at most
   64 files open at once (the build's own count, and /proc/PID/fd sampled every 20 ms).
Needs gdal-bin, rasterio and numpy (the peers of checks/requirements.txt).
"""
import json
import math
import os
import random
import shutil
import sqlite3
import subprocess
import threading
import time

import pytest

from checks.lib.common import TESTDATA, mse, psnr, require
from checks.lib.terrain import decode_elevation  # docs/FORMAT.md's encodings, q-planar-deflate included

pytestmark = [pytest.mark.gdal, pytest.mark.slow]

DATA = os.environ.get("MOSAIC_DATA", TESTDATA)
SRC = os.path.join(DATA, "geotiff", "rio-rgbify__elev.tif")
BIN = WORK = None  # set by the work fixture


def run(*args, **kw):
    return subprocess.run([BIN, *args], check=True, capture_output=True, text=True, **kw)


def build(sources, out, *extra):
    r = run("build", *sources, "-o", out, "--codec", "png", "--quiet", *extra)
    return r.stdout


def archive(path):
    db = sqlite3.connect(path)
    tiles = {(z, x, y): bytes(d) for z, x, y, d in db.execute("select zoom_level, tile_column, tile_row, tile_data from tiles")}
    elev = {(z, x, y): (e, w, h, bytes(d)) for z, x, y, e, w, h, d in
            db.execute("select zoom_level, tile_column, tile_row, encoding, width, height, data from elevation")}
    meta = dict(db.execute("select name, value from metadata"))
    return tiles, elev, meta


@pytest.fixture(scope="module")
def work(tilepack, tmp_path_factory):
    global BIN, WORK
    assert os.path.isfile(SRC), f"{SRC} not found"
    assert shutil.which("gdalbuildvrt"), "needs gdal-bin (apt-get install -y gdal-bin)"
    # A missing tool fails the check (as the script did), never skips it.
    require("rasterio", "numpy")
    BIN, WORK = tilepack, str(tmp_path_factory.mktemp("mosaic-check"))
    return WORK


# 1. A real DEM cut into four pieces: the pieces, their folder and a gdalbuildvrt VRT.

@pytest.fixture(scope="module")
def uncut(work):
    import numpy as np  # noqa: F401
    import rasterio
    from rasterio.warp import transform as warp_transform
    from rasterio.windows import Window
    pieces = os.path.join(WORK, "pieces")
    os.makedirs(pieces)
    with rasterio.open(SRC) as s:
        W, H = s.width, s.height
        cx, cy = W * 2 // 5, H * 3 // 5
        for i, (x, y, w, h) in enumerate([(0, 0, cx, cy), (cx, 0, W - cx, cy), (0, cy, cx, H - cy), (cx, cy, W - cx, H - cy)]):
            win = Window(x, y, w, h)
            prof = s.profile.copy()
            prof.update(width=w, height=h, transform=s.window_transform(win), tiled=False)
            prof.pop("blockxsize", None); prof.pop("blockysize", None)
            with rasterio.open(f"{pieces}/piece{i}.tif", "w", **prof) as d:
                d.write(s.read(window=win))
                d.update_tags(**s.tags())
        seam_x = s.transform * (cx, 0)
        seam_y = s.transform * (0, cy)
        crs, bounds, pixel = s.crs, s.bounds, s.res
    subprocess.run(["gdalbuildvrt", "-q", f"{WORK}/mosaic.vrt", *sorted(f"{pieces}/{n}" for n in os.listdir(pieces))], check=True)

    uncut = f"{WORK}/uncut.mbtiles"
    build([SRC], uncut)
    ref = archive(uncut)
    names = sorted(os.listdir(pieces))
    cases = {"4 pieces": [f"{pieces}/{n}" for n in names], "folder": [pieces], "gdalbuildvrt VRT": [f"{WORK}/mosaic.vrt"]}
    maxzoom = int(ref[2]["maxzoom"])
    # Query points: 100 in the interior, 100 on each seam line (vertical and horizontal).
    rng = random.Random(14)
    pts = []
    for _ in range(100):
        pts.append((rng.uniform(bounds.left, bounds.right), rng.uniform(bounds.bottom, bounds.top)))
    for _ in range(100):
        pts.append((seam_x[0] + rng.uniform(-1, 1) * pixel[0] * 0.5, rng.uniform(bounds.bottom, bounds.top)))
        pts.append((rng.uniform(bounds.left, bounds.right), seam_y[1] + rng.uniform(-1, 1) * pixel[1] * 0.5))
    lons, lats = warp_transform(crs, "EPSG:4326", [p[0] for p in pts], [p[1] for p in pts])

    def answers(path):
        out = []
        for lon, lat in zip(lons, lats):
            a = json.loads(run("query", f"{lat:.9f}", f"{lon:.9f}", str(maxzoom), "--archive", path, "--json").stdout)
            out.append((a.get("rgba"), a.get("elevation_m")))
        return out

    ref_answers = answers(uncut)
    print(f"1. {os.path.basename(SRC)} {W}x{H} cut at x={cx}, y={cy}: uncut build {len(ref[0])} tiles, "
          f"{len(ref[1])} elevation grids, max zoom {maxzoom}")
    return cases, ref, ref_answers, answers, pts


@pytest.mark.parametrize("label", ["4 pieces", "folder", "gdalbuildvrt VRT"])
def test_mosaic_equals_the_uncut_build(uncut, label):
    """{label}: tiles and elevations identical to the uncut build's, queries equal, tilepack:sources 4 files."""
    import numpy as np
    cases, ref, ref_answers, answers, pts = uncut
    srcs = cases[label]
    out = f"{WORK}/{label.split()[0]}.mbtiles"
    build(srcs, out)
    got = archive(out)
    same_tiles = got[0] == ref[0]
    same_elev = all(np.array_equal(decode_elevation(*got[1][k]), decode_elevation(*ref[1][k]), equal_nan=True) for k in ref[1]) and got[1].keys() == ref[1].keys()
    q = answers(out)
    q_same = sum(1 for a, b in zip(q, ref_answers) if a == b)
    sources = json.loads(got[2].get("tilepack:sources", "[]"))
    good = same_tiles and same_elev and q_same == len(pts) and len(sources) == 4
    detail = (f"{label:18s} tiles identical: {same_tiles}, elevations identical: {same_elev}, "
              f"queries equal: {q_same}/{len(pts)} (200 on seams), tilepack:sources {len(sources)} files")
    print(detail)
    assert good, detail



def test_two_utm_zones_against_gdalwarp_seam_band_within_0_5_db(work):
    """2. Two UTM zones: the seam band's PSNR within 0.5 dB of the interior's (against gdalwarp)."""
    import numpy as np
    import rasterio
    from rasterio.transform import from_origin
    from rasterio.warp import transform as warp_transform
    def terrain(lon, lat):
        # Smooth relief plus detail at ~300 m, so interpolation error is measurable.
        x, y = np.radians(lon) * 6371000, np.radians(lat) * 6371000
        return (1500 + 600 * np.sin(x / 4000) * np.cos(y / 5000) + 80 * np.sin(x / 300 + 1) * np.sin(y / 350)).astype(np.float32)

    res = 20.0
    zone_files = []
    for epsg, lon0, lon1 in [(32632, 11.94, 12.0), (32633, 12.0, 12.06)]:
        lat0, lat1 = 46.0, 46.05
        xs, ys = warp_transform("EPSG:4326", f"EPSG:{epsg}", [lon0, lon1, lon0, lon1], [lat0, lat0, lat1, lat1])
        # The zone's grid stops at 12°E (its pixels whose centre lies beyond are nodata).
        left, right = math.floor(min(xs) / res) * res, math.ceil(max(xs) / res) * res
        bottom, top = math.floor(min(ys) / res) * res, math.ceil(max(ys) / res) * res
        w, h = int((right - left) / res), int((top - bottom) / res)
        cols, rows = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
        px, py = left + cols * res, top - rows * res
        lo, la = warp_transform(f"EPSG:{epsg}", "EPSG:4326", px.ravel(), py.ravel())
        lo, la = np.array(lo).reshape(h, w), np.array(la).reshape(h, w)
        z = terrain(lo, la)
        if os.environ.get("RAGGED"):  # cut both zones at exactly 12°E (pixel by pixel)
            inside = (lo >= lon0) & (lo < lon1) if epsg == 32632 else (lo >= lon0) & (lo <= lon1)
            z[~inside] = -9999
        edge = (epsg, left, res)
        path = f"{WORK}/zone{epsg % 100}.tif"
        with rasterio.open(path, "w", driver="GTiff", width=w, height=h, count=1, dtype="float32", crs=f"EPSG:{epsg}",
                           transform=from_origin(left, top, res, res), nodata=-9999) as d:
            d.write(z, 1)
        zone_files.append(path)
    utm = f"{WORK}/utm.mbtiles"
    build(zone_files, utm, "--color", "elevation")
    tiles, elev, meta = archive(utm)
    mz = int(meta["maxzoom"])
    keys = [k for k in elev if k[0] == mz]
    xs_t = [k[1] for k in keys]; ys_t = [(1 << mz) - 1 - k[2] for k in keys]
    x0, x1, y0, y1 = min(xs_t), max(xs_t), min(ys_t), max(ys_t)
    ours = np.full(((y1 - y0 + 1) * 256, (x1 - x0 + 1) * 256), np.nan, np.float32)
    for k in keys:
        e = decode_elevation(*elev[k])
        ty = (1 << mz) - 1 - k[2]
        ours[(ty - y0) * 256:(ty - y0 + 1) * 256, (k[1] - x0) * 256:(k[1] - x0 + 1) * 256] = e
    R = 6378137.0 * math.pi
    size = 2 * R / (1 << mz)
    te = (-R + x0 * size, R - (y1 + 1) * size, -R + (x1 + 1) * size, R - y0 * size)
    gw = f"{WORK}/gdalwarp.tif"
    subprocess.run(["gdalwarp", "-q", "-overwrite", "-r", "bilinear", "-t_srs", "EPSG:3857", "-te", *map(str, te),
                    "-ts", str(ours.shape[1]), str(ours.shape[0]), "-dstnodata", "nan", *zone_files, gw], check=True)
    with rasterio.open(gw) as g:
        theirs = g.read(1).astype(np.float32)
        gt = g.transform
    both = np.isfinite(ours) & np.isfinite(theirs)
    # Distance of each output pixel from the seam, in output pixels: the west edge of the zone-33
    # file (it is listed last, so it wins over the overlap), or 12°E when the zones are cut there.
    cc, rr = np.meshgrid(np.arange(ours.shape[1]) + 0.5, np.arange(ours.shape[0]) + 0.5)
    mx, my = gt.c + cc * gt.a, gt.f + rr * gt.e
    if os.environ.get("RAGGED"):
        dist_px = np.abs(np.degrees(mx / 6378137.0) - 12.0) / (360.0 / (256 * (1 << mz)))
    else:
        ex, _ = warp_transform("EPSG:3857", "EPSG:32633", mx.ravel(), my.ravel())
        lat_rows = np.degrees(2 * np.arctan(np.exp(my / 6378137.0)) - math.pi / 2)
        ground = size / 256 * np.cos(np.radians(lat_rows))  # metres per output pixel
        dist_px = np.abs(np.array(ex).reshape(mx.shape) - edge[1]) / ground
    seam = both & (dist_px <= 8)
    inner = both & (dist_px > 8)
    peak = float(np.nanmax(theirs[both]) - np.nanmin(theirs[both]))
    def psnr_of(mask):
        return psnr(ours[mask], theirs[mask], peak), mse(ours[mask], theirs[mask]), int(mask.sum())
    ps, ms, ns = psnr_of(seam); pi, mi, ni = psnr_of(inner)
    # Pixels one side has data and the other not (cracks or extra coverage), whole window.
    only_ours = int((np.isfinite(ours) & ~np.isfinite(theirs)).sum())
    only_theirs = int((~np.isfinite(ours) & np.isfinite(theirs)).sum())
    good = ps >= pi - 0.5
    print(f"2. UTM 32|33 {'cut at 12°E' if os.environ.get('RAGGED') else 'overlapping at 12°E'}, {len(keys)} max-zoom (z{mz}) tiles vs gdalwarp -r bilinear to EPSG:3857 (peak {peak:.0f} m):")
    print(f"   seam band (±8 px of the seam): PSNR {ps:.2f} dB (RMSE {math.sqrt(ms):.3f} m, {ns} px); interior: PSNR {pi:.2f} dB "
          f"(RMSE {math.sqrt(mi):.3f} m, {ni} px); difference {ps - pi:+.2f} dB  {'ok' if good else 'FAIL'}")
    print(f"   coverage: {only_ours} px with data only in ours, {only_theirs} only in gdalwarp's (of {ours.size})")
    assert good, f"seam band PSNR {ps:.2f} dB more than 0.5 dB below the interior's {pi:.2f} dB"



@pytest.mark.skipif(os.environ.get("MOSAIC_SKIP_400") == "1", reason="MOSAIC_SKIP_400=1")
def test_400_small_files_under_256_mib_and_at_most_64_open(work):
    """3. 400 files of 64×64: peak RSS under 256 MiB, at most 64 files open at once."""
    import numpy as np
    import rasterio
    from rasterio.transform import from_origin
    many = f"{WORK}/many"
    os.makedirs(many)
    n, side, step = 20, 64, 0.0003
    for j in range(n):
        for i in range(n):
            west, north = 6.8 + i * side * step, 45.95 - j * side * step
            cols, rows = np.meshgrid(np.arange(side) + i * side, np.arange(side) + j * side)
            z = (1500 + 600 * np.sin(cols / 50) * np.cos(rows / 60) + 3 * cols / 10).astype(np.float32)
            with rasterio.open(f"{many}/t{j:02d}_{i:02d}.tif", "w", driver="GTiff", width=side, height=side, count=1,
                               dtype="float32", crs="EPSG:4326", transform=from_origin(west, north, step, step), nodata=-9999) as d:
                d.write(z, 1)
    out = f"{WORK}/many.mbtiles"
    proc = subprocess.Popen(["/usr/bin/time", "-v", BIN, "build", many, "-o", out, "--codec", "png", "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak_fd = 0
    def sample():
        nonlocal peak_fd
        while proc.poll() is None:
            try:
                # The child of /usr/bin/time is the build.
                kids = open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()
                for k in kids:
                    c = sum(1 for f in os.listdir(f"/proc/{k}/fd") if os.readlink(f"/proc/{k}/fd/{f}").endswith(".tif"))
                    peak_fd = max(peak_fd, c)
            except (FileNotFoundError, ProcessLookupError, OSError):
                pass
            time.sleep(0.02)
    t = threading.Thread(target=sample); t.start()
    stdout, stderr = proc.communicate(); t.join()
    rss_kb = int(next(l.split(":")[1] for l in stderr.splitlines() if "Maximum resident set size" in l))
    wall = next(l.split("):", 1)[1].strip() for l in stderr.splitlines() if "Elapsed (wall clock)" in l)
    line = next((l.strip() for l in stdout.splitlines() if l.strip().startswith("mosaic:")), "")
    reported = int(line.split("at most ")[1].split()[0]) if "at most " in line else -1
    good = proc.returncode == 0 and rss_kb < 256 * 1024 and reported <= 64 and peak_fd <= 64
    print(f"3. 400 files of {side}x{side} ({n * side}x{n * side} px): {stdout.splitlines()[0] if stdout else stderr[-300:]}")
    detail = f"{line}; sampled /proc fd peak {peak_fd} .tif descriptors; peak RSS {rss_kb / 1024:.1f} MiB; wall {wall}"
    print(f"   {detail}")
    assert good, f"exit {proc.returncode}: {detail}"

