"""Issue 25, Must-show 5: maps that never go blank.

Builds (debug `tilepack`, PNG tiles) SampleRegions/montblanc-color.tif at --min-zoom 15
--max-zoom 17 and SampleRegions/montblanc-dem.tif at --min-zoom 11 --max-zoom 12, each in a
library of its own under a temporary directory. The whole colour build is ~21,500 tiles
(~1 GB of PNG): far over two minutes in a debug build, so by default the check builds one
part of it, `--shard 32/64` (the same plan, zooms and pixels, ~340 tiles, quadtree-local:
its z15 tiles come with all their z16 and z17 tiles), and looks at a point in its middle;
OVERZOOM_SHARDS=1 builds it whole (OVERZOOM_SHARDS=N: part N/2 of N). Then
  1. `render` at max zoom + 3 and at min zoom − 2 around a point inside each region draws the
     region: the share of non-background pixels, and for plausibility the picture against a
     render at the max zoom (scaled up 8×, nearest) and at the min zoom (4 × 4 block means);
  2. `query` below the min zoom answers: colour, elevation_m not null, data_zoom = min zoom;
     beyond the max zoom: data_zoom = max zoom, overzoomed true;
  3. `render` and `query` where no archive covers the point exit 2 (`query --json` still
     prints the uncovered object on stdout);
  4. `serve` over the colour library: /view and /tiles/…png beyond the zooms carry
     X-Tile-Overzoom, /regions says view_maxzoom 22, and headless Chromium on the viewer at
     z19 (?click=LAT,LON,19) shows the map: >= 90 % of the map area's pixels not background
     (neither the renderer's background nor Leaflet's grey).
Needs Debian's chromium and libjs-leaflet (.ci/run installs them). OVERZOOM_SCREENSHOT=PATH
keeps the viewer's screenshot.

Usage: python3 -m pytest checks/test_overzoom_check.py   (BIN=… for another binary)
"""
import json
import math
import os
import shutil
import sqlite3
import subprocess
import time
import urllib.request

import numpy as np
import pytest
from PIL import Image

from checks.lib.common import Serve
from checks.lib.terrain import tile_of, tilepack

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.usefixtures("tilepack")]

BACKGROUND = (236, 234, 228)   # MapRenderer.background
LEAFLET_GREY = (221, 221, 221)  # .leaflet-container's background (#ddd)
POINT = (45.85, 6.87)           # inside the DEM sample, off the region label at its centre
SHARDS = int(os.environ.get("OVERZOOM_SHARDS", "64"))
NAMES = ["montblanc-color", "montblanc-dem"]


def archive_tiles_index(path):
    """{(z, x, y_xyz)} of an archive's stored tiles, without their data."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT zoom_level, tile_column, tile_row FROM tiles").fetchall()
    finally:
        con.close()
    return {(z, x, (1 << z) - 1 - r) for z, x, r in rows}


def interior_point(tiles, zooms):
    """The centre of a min-zoom tile of a partial build whose max-zoom descendants are all
    stored, the one with most stored neighbours (then the first in order: a stable choice).
    Every view the check makes around it (z19-z20, a few hundred pixels) lies inside it."""
    lo, hi = zooms
    k = hi - lo
    ok = []
    for (z, x, y) in sorted(tiles):
        if z == lo and all((hi, (x << k) + i, (y << k) + j) in tiles for i in range(1 << k) for j in range(1 << k)):
            neighbours = sum((lo, x + dx, y + dy) in tiles for dx in (-1, 0, 1) for dy in (-1, 0, 1))
            ok.append((-neighbours, x, y))
    if not ok:
        pytest.fail(f"no whole tile at z{lo} in the partial build ({len(tiles)} tiles): use OVERZOOM_SHARDS=1")
    _, x, y = min(ok)
    n = 1 << lo
    lon = (x + 0.5) / n * 360 - 180
    lat = math.degrees(math.atan(math.sinh(math.pi * (1 - 2 * (y + 0.5) / n))))
    return lat, lon

def origin(point, zoom, size):
    """The global pixel of a render's top-left corner, as MapFrame computes it."""
    n = 1 << zoom
    sn = math.sin(math.radians(point[0]))
    fx = (point[1] + 180) / 360 * n
    fy = (0.5 - math.log((1 + sn) / (1 - sn)) / (4 * math.pi)) * n
    return math.floor(fx * 256) - size // 2, math.floor(fy * 256) - size // 2


def drawn_share(img):
    body = img[:-16]   # the attribution box sits in the bottom rows
    return float(np.mean(np.any(body != BACKGROUND, axis=2)))


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    need = [p for p, present in (("chromium", shutil.which("chromium")),
                                 ("libjs-leaflet", os.path.exists("/usr/share/javascript/leaflet/leaflet.js"))) if not present]
    if need:
        pytest.fail(f"needs {' '.join(need)} (apt-get install {' '.join(need)}; .ci/run installs them)")
    return str(tmp_path_factory.mktemp("tilepack-overzoom"))


@pytest.fixture(scope="module")
def env(work):
    home = os.path.join(work, "home")   # no trust file from the machine: open libraries
    os.makedirs(home, exist_ok=True)
    return dict(os.environ, XDG_CONFIG_HOME=home, HOME=home)


@pytest.fixture(scope="module")
def libs(work, env, sample_regions):
    """{name: (library, (min zoom, max zoom), point looked at)}."""
    libs = {}
    for name, zooms in (("montblanc-color", (15, 17)), ("montblanc-dem", (11, 12))):
        lib = os.path.join(work, name)
        os.makedirs(lib)
        archive = os.path.join(lib, name + ".mbtiles")
        shard = ["--shard", f"{SHARDS // 2}/{SHARDS}"] if name == "montblanc-color" and SHARDS > 1 else []
        t0 = time.time()
        tilepack(["build", os.path.join(sample_regions, name + ".tif"), "--min-zoom", zooms[0], "--max-zoom", zooms[1],
                  "--codec", "png", "--quiet", "-o", archive] + shard, timeout=7200, env=env)
        tiles = archive_tiles_index(archive)
        print(f"built {name} z{zooms[0]}-{zooms[1]}{' shard ' + shard[1] if shard else ''}: {len(tiles)} tiles "
              f"in {time.time() - t0:.1f} s", flush=True)
        point = POINT if not shard else interior_point(tiles, zooms)
        print(f"  looking at {point[0]:.5f}, {point[1]:.5f}", flush=True)
        libs[name] = (lib, zooms, point)
    return libs


def render(env, lib, point, zoom, size, out):
    p = tilepack(["render", point[0], point[1], zoom, "--size", f"{size}x{size}", "--library", lib, "-o", out],
                 check=False, env=env)
    img = np.asarray(Image.open(out).convert("RGB")).astype(int) if p.returncode == 0 and os.path.exists(out) else None
    return p, img


# 1. render beyond both ends of the zooms.

@pytest.fixture(scope="module", params=NAMES)
def renders(request, libs, env, work):
    name = request.param
    lib, (lo, hi), point = libs[name]
    r = {"name": name, "lo": lo, "hi": hi, "point": point}
    r["ref"] = render(env, lib, point, hi, 512, os.path.join(work, f"{name}-ref.png"))
    r["deep"] = render(env, lib, point, hi + 3, 512, os.path.join(work, f"{name}-deep.png"))
    r["base"] = render(env, lib, point, lo, 1024, os.path.join(work, f"{name}-base.png"))
    r["low"] = render(env, lib, point, lo - 2, 512, os.path.join(work, f"{name}-low.png"))
    return r


def test_render_at_max_zoom_plus_3_says_it_was_made_from_max_zoom(renders):
    """{name}: render at max zoom + 3 exits 0 and says it was made from the max zoom"""
    p_deep = renders["deep"][0]
    assert p_deep.returncode == 0 and f"made from zoom {renders['hi']}" in p_deep.stdout, (p_deep.stdout + p_deep.stderr).strip()


def test_max_zoom_plus_3_is_not_blank(renders):
    deep = renders["deep"][1]
    assert deep is not None and renders["ref"][1] is not None, "no picture"
    share = drawn_share(deep)
    assert share >= 0.99, f"{share:.1%} of pixels not background"


def test_max_zoom_plus_3_matches_max_zoom_scaled_8x(renders):
    (_, ref), (_, deep) = renders["ref"], renders["deep"]
    assert deep is not None and ref is not None, "no picture"
    # The same place in the max-zoom picture, scaled 8× (nearest): each deep pixel's global
    # pixel divided by 8.
    hi, point = renders["hi"], renders["point"]
    (rx, ry), (dx, dy) = origin(point, hi, 512), origin(point, hi + 3, 512)
    xs = (dx + np.arange(512)) // 8 - rx
    ys = (dy + np.arange(512 - 16)) // 8 - ry
    up = ref[ys][:, xs]
    mad = float(np.mean(np.abs(up - deep[:-16])))
    assert mad < 8, f"mean abs difference {mad:.2f} levels"


def test_render_at_min_zoom_minus_2_says_it_was_made_from_min_zoom(renders):
    """{name}: render at min zoom - 2 exits 0 and says it was made from the min zoom"""
    p_low = renders["low"][0]
    assert p_low.returncode == 0 and f"made from zoom {renders['lo']}" in p_low.stdout, (p_low.stdout + p_low.stderr).strip()


def test_min_zoom_minus_2_is_not_blank(renders):
    low = renders["low"][1]
    assert low is not None and renders["base"][1] is not None, "no picture"
    share = drawn_share(low)
    assert share > 0.01, f"{share:.1%} of pixels not background"


def test_min_zoom_minus_2_matches_the_4x4_block_means(renders):
    (_, base), (_, low) = renders["base"], renders["low"]
    assert low is not None and base is not None, "no picture"
    # Each z(lo − 2) pixel is the mean of a 4 × 4 block of the z(lo) picture (where the block
    # lies inside it, above its attribution rows).
    lo, point = renders["lo"], renders["point"]
    (bx, by), (lx, ly) = origin(point, lo, 1024), origin(point, lo - 2, 512)
    ox, oy = 4 * lx - bx, 4 * ly - by
    i0, j0 = max(0, -(ox // 4)), max(0, -(oy // 4))
    i1, j1 = min(512, (1024 - ox) // 4), min(512 - 16, (1024 - 16 - oy) // 4)
    crop = base[oy + 4 * j0:oy + 4 * j1, ox + 4 * i0:ox + 4 * i1]
    blocks = crop.reshape(j1 - j0, 4, i1 - i0, 4, 3).mean(axis=(1, 3))
    mad = float(np.mean(np.abs(low[j0:j1, i0:i1] - blocks)))
    assert mad < 4, f"mean abs difference {mad:.2f} levels"


# 2. query below and beyond the zooms.

@pytest.mark.parametrize("name", NAMES)
def test_query_below_min_zoom_answers_from_min_zoom(libs, env, name):
    lib, (lo, hi), point = libs[name]
    p = tilepack(["query", point[0], point[1], lo - 2, "--library", lib, "--json"], check=False, env=env)
    a = json.loads(p.stdout) if p.returncode == 0 else {}
    ok = a.get("present") is True and a.get("data_zoom") == lo and a.get("overzoomed") is False and a.get("rgba")
    if name == "montblanc-dem":
        ok = ok and isinstance(a.get("elevation_m"), (int, float)) and a.get("elevation_zoom") == lo
    assert ok, p.stdout.strip() or p.stderr.strip()


@pytest.mark.parametrize("name", NAMES)
def test_query_beyond_max_zoom_answers_from_max_zoom_overzoomed(libs, env, name):
    lib, (lo, hi), point = libs[name]
    p = tilepack(["query", point[0], point[1], hi + 4, "--library", lib, "--json"], check=False, env=env)
    a = json.loads(p.stdout) if p.returncode == 0 else {}
    assert a.get("present") is True and a.get("data_zoom") == hi and a.get("overzoomed") is True, \
        p.stdout.strip() or p.stderr.strip()


# 3. Nothing there: exit 2.

def test_query_where_no_archive_covers_the_point_exits_2(libs, env):
    """query where no archive covers the point exits 2 with the uncovered object on stdout"""
    lib = libs["montblanc-dem"][0]
    p = tilepack(["query", "10", "10", "12", "--library", lib, "--json"], check=False, env=env)
    try:
        obj = json.loads(p.stdout)
    except ValueError:
        obj = {}
    assert p.returncode == 2 and "archive" in obj and obj["archive"] is None and obj.get("data_zoom", 0) is None, \
        f"exit {p.returncode}"


def test_render_where_no_archive_covers_the_point_exits_2(libs, env, work):
    """render where no archive covers the point exits 2 naming the library, and writes no
    picture (a blank one would pass for a map)"""
    lib = libs["montblanc-dem"][0]
    out = os.path.join(work, "nowhere.png")
    if os.path.exists(out):
        os.unlink(out)
    p = tilepack(["render", "10", "10", "12", "--library", lib, "-o", out], check=False, env=env)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and not os.path.exists(out) and len(lines) == 1 and lines[0].startswith(f"error: {lib}") \
        and "nothing covers" in lines[0], f"exit {p.returncode}: {p.stderr.strip()}"


# 4. serve and the viewer at z19 over montblanc-color z15-17.

@pytest.fixture(scope="module")
def server(libs, env, tilepack):
    lib = libs["montblanc-color"][0]
    with Serve(["--library", lib, "--log-level", "warning"], binary=tilepack, env=env) as s:
        yield s


def get(server, path):
    with urllib.request.urlopen(server.base + path, timeout=120) as r:
        return r.status, dict(r.headers), r.read()


def test_serve_started(server):
    assert server.port is not None and server.alive()


def test_regions_the_viewers_zooms_follow_the_library(server, libs):
    lo = libs["montblanc-color"][1][0]
    regions = json.loads(get(server, "/regions")[2])
    assert regions.get("view_maxzoom") == 22 and regions.get("view_minzoom") == lo - 3, \
        f"{regions.get('view_minzoom')}..{regions.get('view_maxzoom')}"


@pytest.fixture(scope="module")
def z19(libs):
    point = libs["montblanc-color"][2]
    return tile_of(point[1], point[0], 19)


def test_view_at_z19_is_made_from_z17(server, libs, z19):
    """/view at z19 is made from z17 (X-Tile-Overzoom: 17)"""
    hi = libs["montblanc-color"][1][1]
    status, headers, body = get(server, f"/view/19/{z19[0]}/{z19[1]}.png")
    assert status == 200 and headers.get("X-Tile-Overzoom") == str(hi), str(headers.get("X-Tile-Overzoom"))


def test_tiles_at_z19_are_made_from_z17(server, libs, z19):
    """/tiles/montblanc-color/19/…png is made from z17 (X-Tile-Overzoom: 17)"""
    hi = libs["montblanc-color"][1][1]
    status, headers, body = get(server, f"/tiles/montblanc-color/19/{z19[0]}/{z19[1]}.png")
    assert status == 200 and headers.get("X-Tile-Overzoom") == str(hi), str(headers.get("X-Tile-Overzoom"))


def test_tiles_below_min_zoom_are_made_from_min_zoom(server, libs, z19):
    """/tiles/…/{lo - 2}/….png is made from z{lo} (underzoom)"""
    lo = libs["montblanc-color"][1][0]
    x, y = z19
    status, headers, body = get(server, f"/tiles/montblanc-color/{lo - 2}/{x >> (19 - lo + 2)}/{y >> (19 - lo + 2)}.png")
    assert status == 200 and headers.get("X-Tile-Overzoom") == str(lo), str(headers.get("X-Tile-Overzoom"))


@pytest.fixture(scope="module")
def screenshot(server, libs, work):
    point = libs["montblanc-color"][2]
    shot = os.path.join(work, "viewer-z19.png")
    t0 = time.time()
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                    f"--user-data-dir={os.path.join(work, 'chrome')}", "--window-size=1024,768", "--virtual-time-budget=30000",
                    f"--screenshot={shot}", f"{server.base}/?click={point[0]},{point[1]},19"],
                   capture_output=True, text=True, timeout=300)
    print(f"chromium screenshot in {time.time() - t0:.1f} s", flush=True)
    if os.path.exists(shot) and os.environ.get("OVERZOOM_SCREENSHOT"):
        shutil.copy(shot, os.environ["OVERZOOM_SCREENSHOT"])
    return shot


def test_chromium_wrote_a_screenshot(screenshot):
    assert os.path.exists(screenshot)


@pytest.fixture(scope="module")
def map_area(screenshot):
    assert os.path.exists(screenshot), "chromium wrote no screenshot"
    img = np.asarray(Image.open(screenshot).convert("RGB")).astype(int)
    area = img[:, : img.shape[1] - 300]   # the side panel is 300 px wide
    background = np.all(area == BACKGROUND, axis=2) | np.all(area == LEAFLET_GREY, axis=2)
    return 1 - float(np.mean(background)), len(np.unique(area.reshape(-1, 3), axis=0))


def test_viewer_at_z19_shows_the_map(map_area):
    """viewer at z19 over montblanc-color z15-17 shows the map"""
    share, colours = map_area
    assert share >= 0.90, f"{share:.1%} of the map area not background, {colours} colours"


def test_the_map_is_an_image_not_a_flat_fill(map_area):
    share, colours = map_area
    assert colours > 200, f"{colours} colours"
