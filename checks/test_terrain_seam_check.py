"""Must-show 1 of issue 25: terrain built in pieces matches itself, and the tint is a function
of metres whatever the source's projection and resolution.

1. rio-rgbify's elev.tif (a real float32 DEM, EPSG:3857) is cut into a north and a south half
   (gdal_translate -srcwin); each half and the whole are built alone with defaults and
   --codec png. Wherever a half and the whole both have opaque max-zoom pixels, every channel
   must be within 2 levels, leaving out the pixels within 2 source rows of the cut (where the
   half lacks the neighbours the shading and the bilinear resampling need).
   Control: the same with `--tint-range percentile` (the old per-build stretch) must differ by
   more than 2 levels, so the comparison can fail.
2. The DEM (and the Zurich 25 m DEM, assigned EPSG:21781 and warped to EPSG:3857, whose
   393–870 m span greens to tans) gdalwarped to EPSG:4326 at 1.7× its pixel size, and the
   DEM itself, built with
   --no-hillshade (tint alone): for every 0.5 m band of metres (the metres each tile pixel
   was drawn from, by GDAL's bilinear warp of that build's source onto the tile), the median
   colour of the two archives must agree within 2 levels per channel. Control: the north half
   built with `--tint-range percentile` against the warped DEM must not.

With PICTURE=PATH BEFORE_BIN=OLD_TILEPACK in the environment it also draws the cut before (the
old binary, per-build stretch) and after (this binary) into PATH (docs/images/terrain-seam.png).

Usage: [PICTURE=PATH BEFORE_BIN=BIN] python3 -m pytest checks/test_terrain_seam_check.py   (BIN=… for this binary)
"""
import json
import os
import time

import numpy as np
import pytest

from checks.lib.terrain import compose, max_zoom_tiles, run, tile_bounds_3857, tile_grid_metres, tilepack

pytestmark = [pytest.mark.gdal, pytest.mark.slow, pytest.mark.usefixtures("tilepack")]


def build(src, out, *opts, binary=None):
    args = ["build", src, "-o", out, "--codec", "png", "--quiet"] + list(opts)
    if binary:
        run([binary] + args)
    else:
        tilepack(args)
    return max_zoom_tiles(out)


def seam_diff(half, whole, cut_y, exclude):
    """Largest channel difference between a half's and the whole's max-zoom tiles where both
    are opaque, away from the cut (|merc y − cut_y| > exclude), and the pixels compared."""
    (zh, th), (zw, tw) = half, whole
    assert zh == zw, f"max zooms differ: {zh} vs {zw}"
    worst, n = 0, 0
    for key, a in th.items():
        b = tw.get(key)
        if b is None:
            continue
        w, s, e, nn = tile_bounds_3857(zh, *key)
        px = (e - w) / 256
        ys = nn - (np.arange(256) + 0.5) * px
        far = (np.abs(ys - cut_y) > exclude)[:, None]
        ok = (a[..., 3] == 255) & (b[..., 3] == 255) & far
        if ok.any():
            worst = max(worst, int(np.abs(a.astype(int) - b.astype(int))[ok].max()))
            n += int(ok.sum())
    return worst, n


def colour_by_metres(src, archive, step=0.5):
    """{metres band: median RGB} over an archive's opaque max-zoom pixels, each pixel's metres
    taken from GDAL's bilinear warp of `src` onto its tile."""
    z, tiles = max_zoom_tiles(archive)
    metres, colours = [], []
    for (x, y), rgba in tiles.items():
        m = tile_grid_metres(src, z, x, y)
        ok = (rgba[..., 3] == 255) & np.isfinite(m)
        metres.append(m[ok])
        colours.append(rgba[..., :3][ok])
    metres, colours = np.concatenate(metres), np.concatenate(colours).astype(int)
    bands = np.floor(metres / step).astype(int)
    out = {}
    for b in np.unique(bands):
        sel = bands == b
        if sel.sum() >= 5:
            out[int(b)] = np.median(colours[sel], axis=0)
    return out


def tint_diff(a, b):
    common = sorted(set(a) & set(b))
    if not common:
        return None, 0
    return max(float(np.abs(a[k] - b[k]).max()) for k in common), len(common)


def picture(path, before, after, cut_y, z):
    """Before above after: the max-zoom tiles of both halves, a strip around the cut."""
    from PIL import Image, ImageDraw
    rows = []
    for label, (north, south) in (("before: each half stretched over its own percentiles", before),
                                  ("after: absolute tint and hillshade", after)):
        img, x0, y0 = compose([north, south], z)
        w, s, e, n = tile_bounds_3857(z, x0, y0)
        px = (e - w) / 256
        cut_row = int(round((n - cut_y) / px))
        strip = img[max(cut_row - 140, 0):cut_row + 140]
        opaque_cols = np.where(strip[..., 3].max(axis=0) > 0)[0]
        strip = strip[:, opaque_cols.min():opaque_cols.max() + 1]
        pic = Image.fromarray(strip, "RGBA")
        canvas = Image.new("RGBA", (pic.width, pic.height + 18), (255, 255, 255, 255))
        canvas.alpha_composite(pic, (0, 18))
        ImageDraw.Draw(canvas).text((4, 3), label, fill=(0, 0, 0, 255))
        rows.append(canvas)
    out = Image.new("RGBA", (max(r.width for r in rows), sum(r.height for r in rows) + 6), (255, 255, 255, 255))
    y = 0
    for r in rows:
        out.alpha_composite(r, (0, y))
        y += r.height + 6
    out.convert("RGB").save(path, optimize=True)


@pytest.fixture(scope="module")
def dem(testdata):
    return os.path.join(testdata, "geotiff", "rio-rgbify__elev.tif")


@pytest.fixture(scope="module")
def halves(dem, tmp_path_factory):
    """The DEM cut into a north and a south half; (dir, north, south, cut_y, exclude)."""
    d = str(tmp_path_factory.mktemp("tint-seam"))
    info = json.loads(run(["gdalinfo", "-json", dem]).stdout)
    width, height = info["size"]
    gt = info["geoTransform"]
    half = height // 2
    cut_y = gt[3] + half * gt[5]
    exclude = 2 * abs(gt[5])
    north, south = os.path.join(d, "north.tif"), os.path.join(d, "south.tif")
    run(["gdal_translate", "-q", "-srcwin", "0", "0", str(width), str(half), dem, north])
    run(["gdal_translate", "-q", "-srcwin", "0", str(half), str(width), str(height - half), dem, south])
    return d, north, south, cut_y, exclude


@pytest.fixture(scope="module")
def default_builds(dem, halves):
    d, north, south, cut_y, exclude = halves
    p = lambda name: os.path.join(d, name)  # noqa: E731
    t0 = time.time()
    r = {"north": build(north, p("n.mbtiles")), "south": build(south, p("s.mbtiles")), "whole": build(dem, p("w.mbtiles"))}
    print(f"     (halves: {time.time() - t0:.1f} s)", flush=True)
    return r


@pytest.mark.parametrize("name", ["north", "south"])
def test_half_built_alone_matches_the_whole_dem_within_2_levels(default_builds, halves, name):
    """{name} half built alone matches the whole DEM within 2 levels (defaults)"""
    d, north, south, cut_y, exclude = halves
    h = default_builds[name]
    worst, n = seam_diff(h, default_builds["whole"], cut_y, exclude)
    assert n > 10000 and worst <= 2, f"z{h[0]}, {n} px compared, max channel diff {worst}"


def test_control_the_per_build_percentile_stretch_does_not_match(dem, default_builds, halves):
    """control: the per-build percentile stretch (--tint-range percentile) does not match"""
    d, north, south, cut_y, exclude = halves
    p = lambda name: os.path.join(d, name)  # noqa: E731
    z = default_builds["whole"][0]
    pct = ["--tint-range", "percentile", "--min-zoom", str(z)]
    cn, cs, cw = build(north, p("pn.mbtiles"), *pct), build(south, p("ps.mbtiles"), *pct), build(dem, p("pw.mbtiles"), *pct)
    worst = max(seam_diff(cn, cw, cut_y, exclude)[0], seam_diff(cs, cw, cut_y, exclude)[0])
    assert worst > 2, f"max channel diff {worst}"


@pytest.fixture(scope="module")
def zurich(testdata, halves):
    d = halves[0]
    zh = os.path.join(d, "zh-3857.tif")
    run(["gdal_translate", "-q", "-a_srs", "EPSG:21781",
         os.path.join(testdata, "conformance", "georust-geotiff__zh_dem_25.tif"), os.path.join(d, "zh-21781.tif")])
    run(["gdalwarp", "-q", "-t_srs", "EPSG:3857", "-r", "bilinear", os.path.join(d, "zh-21781.tif"), zh])
    return zh


def warp_4326(dem, warped):
    """The DEM gdalwarped to EPSG:4326 at 1.7× its pixel size (once per path)."""
    if os.path.exists(warped):
        return warped
    dgt = json.loads(run(["gdalinfo", "-json", dem]).stdout)["geoTransform"]
    step = 1.7 * dgt[1] / (2 * 3.141592653589793 * 6378137.0 / 360)  # 1.7 × the pixel, in degrees
    run(["gdalwarp", "-q", "-overwrite", "-t_srs", "EPSG:4326", "-tr", repr(step), repr(step), "-r", "bilinear", dem, warped])
    return warped


@pytest.mark.parametrize("name, which", [("elev.tif (0–115 m)", "elev"), ("Zurich DEM (393–870 m)", "zurich")],
                         ids=["elev.tif", "Zurich DEM"])
def test_warped_to_4326_same_tint_for_the_same_metres(request, halves, name, which):
    """{name} warped to EPSG:4326 at 1.7× its pixel size: same tint for the same metres within 2 levels"""
    d = halves[0]
    p = lambda n: os.path.join(d, n)  # noqa: E731
    dem = request.getfixturevalue("dem" if which == "elev" else "zurich")
    t0 = time.time()
    warped = warp_4326(dem, p(f"{which}-4326.tif"))
    a = p(f"tint-{which}-3857.mbtiles"), p(f"tint-{which}-4326.mbtiles")
    build(dem, a[0], "--no-hillshade")
    build(warped, a[1], "--no-hillshade")
    c3857, c4326 = colour_by_metres(dem, a[0]), colour_by_metres(warped, a[1])
    diff, bands = tint_diff(c3857, c4326)
    spread = max(float(np.ptp([c[i] for c in c3857.values()])) for i in range(3))
    print(f"     (4326 warp of {which}: {time.time() - t0:.1f} s)", flush=True)
    assert bands >= 50 and diff is not None and diff <= 2, \
        f"{bands} bands of 0.5 m compared, max median diff {diff}; the tint spans {spread:.0f} levels there"


def test_control_with_per_build_percentiles_the_north_half_and_the_warp_differ(dem, halves):
    """control: with per-build percentiles the north half and the warp differ for the same metres"""
    d, north = halves[0], halves[1]
    p = lambda n: os.path.join(d, n)  # noqa: E731
    warped = warp_4326(dem, p("elev-4326.tif"))
    build(north, p("tint-pn.mbtiles"), "--no-hillshade", "--tint-range", "percentile")
    build(warped, p("tint-pw.mbtiles"), "--no-hillshade", "--tint-range", "percentile")
    cdiff, cbands = tint_diff(colour_by_metres(north, p("tint-pn.mbtiles")), colour_by_metres(warped, p("tint-pw.mbtiles")))
    assert cdiff is not None and cdiff > 2, f"{cbands} bands, max median diff {cdiff}"


@pytest.mark.skipif(not os.environ.get("PICTURE"), reason="PICTURE=PATH BEFORE_BIN=OLD_TILEPACK draws the picture")
def test_picture(default_builds, halves):
    """Draws docs/images/terrain-seam.png's before/after (not a check: a picture on request)."""
    before_bin = os.environ.get("BEFORE_BIN")
    assert before_bin, "PICTURE needs BEFORE_BIN=OLD_TILEPACK (the binary before issue 25)"
    d, north, south, cut_y, exclude = halves
    p = lambda n: os.path.join(d, n)  # noqa: E731
    before = (build(north, p("bn.mbtiles"), binary=before_bin)[1], build(south, p("bs.mbtiles"), binary=before_bin)[1])
    picture(os.environ["PICTURE"], before, (default_builds["north"][1], default_builds["south"][1]), cut_y,
            default_builds["whole"][0])
    print(f"     wrote {os.environ['PICTURE']}")
