"""Issue 23, Must-show 5: at the polygon edge, owning one of the two sample regions (Chamonix),
at zooms 11–13 over both sample polygons, every pixel whose centre lies outside every owned
polygon
  - is drawn by `render --tile` exactly as with nothing owned (the two PNGs compared pixel by
    pixel, only at those pixels), and
  - has alpha 0 in `serve`'s /tiles/R/z/x/y.png tiles of both archives (and in /terrain, the
    elevation masked to nodata).
Which pixels those are is computed here, in Python, from catalog.json with web-mercator math
written below (pixel centres, even-odd over the rings): never by asking tilepack.
Counts those pixels per zoom (0 mismatches required).

Works in a store library set up by checks/lib/store.py in a temporary directory (a ledger per
state: nothing owned, Chamonix owned), so nothing of the user's is touched.

    python3 -m pytest checks/test_edge_mask_check.py
"""
import io
import json
import math
import os
import subprocess
import urllib.error
import urllib.request

import numpy as np
import pytest
from PIL import Image

from checks.lib.common import Serve
from checks.lib.store import sample_store

SIDE = 256
ZOOMS = (11, 12, 13)
CHAMONIX = "com.tilepack.samples.montblanc.chamonix"


# --- Web mercator, written out here ------------------------------------------------------
def unit(lon, lat):
    """Web-mercator unit coordinates: x east, y SOUTH, (0, 0) the world's north-west corner."""
    x = (lon + 180.0) / 360.0
    phi = math.radians(lat)
    y = 0.5 - math.log(math.tan(math.pi / 4 + phi / 2)) / (2 * math.pi)
    return x, y

def tile_of(lon, lat, z):
    x, y = unit(lon, lat)
    n = 1 << z
    return min(n - 1, int(x * n)), min(n - 1, int(y * n))

def projected_rings(product):
    return [[unit(lon, lat) for lon, lat in ring] for ring in product["area"]]

def inside(rings, px, py):
    """Even-odd over every ring (holes cancel) for arrays of points; edges straight in mercator."""
    result = np.zeros(px.shape, dtype=bool)
    for ring in rings:
        for (ax, ay), (bx, by) in zip(ring, ring[1:]):
            if ay == by:
                continue
            crosses = (ay > py) != (by > py)
            xi = ax + (py - ay) * (bx - ax) / (by - ay)
            result ^= crosses & (px < xi)
    return result

def centres(z, tx, ty):
    scale = SIDE * float(1 << z)
    i = np.arange(SIDE, dtype=np.float64)
    px = (tx * SIDE + i + 0.5) / scale
    py = (ty * SIDE + i + 0.5) / scale
    return np.meshgrid(px, py)     # [row j][column i]

# What Chamonix owns: its area (and whatever it includes, for a bundle), at its zooms.
def owned_areas(products, pid):
    p = products[pid]
    areas = [(projected_rings(p), range(p["minzoom"], p["maxzoom"] + 1))] if "area" in p else []
    for other in p.get("includes", []):
        areas += owned_areas(products, other)
    return areas


@pytest.fixture(scope="module")
def state(tilepack, tmp_path_factory):
    """The store, Chamonix bought, and one server over the owned state."""
    s = sample_store(str(tmp_path_factory.mktemp("edge-mask-check")), tilepack)
    r = subprocess.run([tilepack, "store", "buy", CHAMONIX, *s.opts()], env=s.env, capture_output=True, text=True)
    assert r.returncode == 0, f"buying {CHAMONIX} failed: {r.stderr}"
    with Serve([*s.opts(), "--ledger", s.ledger, "--log-level", "warning"], binary=tilepack, env=s.env,
               stdout=os.path.join(s.work, "serve.out"), stderr=os.path.join(s.work, "serve.err")) as server:
        yield s, server


class Edge:
    def __init__(self, tilepack, store, port):
        self.tilepack, self.store, self.port = tilepack, store, port
        self.work, self.lib, self.trust = store.work, store.lib, store.trust
        self.none_ledger = os.path.join(store.work, "none.sqlite")   # a ledger of another account: nothing owned
        self.owned_ledger = store.ledger                            # the Chamonix region owned
        catalog = json.load(open(os.path.join(self.lib, "catalog.json")))
        self.products = {p["id"]: p for p in catalog["products"]}
        # What Chamonix owns: its area (and whatever it includes, for a bundle), at its zooms.
        self.owned = owned_areas(self.products, CHAMONIX)
        # Tiles over both sample polygons (their bounding box), zooms 11–13.
        region_rings = [p["area"][0] for p in catalog["products"] if p["kind"] == "region"]
        self.west = min(lon for r in region_rings for lon, _ in r)
        self.east = max(lon for r in region_rings for lon, _ in r)
        self.south = min(lat for r in region_rings for _, lat in r)
        self.north = max(lat for r in region_rings for _, lat in r)

    def render(self, ledger, z, x, y, out):
        # Each ledger its own account (a fresh one draws one; the owned one keeps the buyer's).
        account = [] if ledger == self.owned_ledger else ["--account", "00000000-0000-4000-8000-000000000000"]
        if os.path.exists(out):
            os.unlink(out)  # a picture left from the tile before must not stand for this one
        r = subprocess.run([self.tilepack, "render", "--tile", f"{z}/{x}/{y}", "--library", self.lib, "--trust", self.trust,
                            "--ledger", ledger, *account, "-o", out],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=self.store.env)
        if r.returncode == 2 and not os.path.exists(out):
            # No archive covers the tile: nothing is drawn and no picture written, owned or not.
            return np.zeros((SIDE, SIDE, 4), dtype=np.uint8)
        if r.returncode not in (0, 3):   # 3: something drawn locked
            pytest.fail(f"render {z}/{x}/{y} failed ({r.returncode}): {r.stderr.strip()}")
        return np.asarray(Image.open(out).convert("RGBA"))

    def fetch(self, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def zoom(self, z):
        render, fetch, owned, work = self.render, self.fetch, self.owned, self.work
        owned_ledger, none_ledger = self.owned_ledger, self.none_ledger
        x0, y0 = tile_of(self.west, self.north, z); x1, y1 = tile_of(self.east, self.south, z)
        tiles = [(x, y) for y in range(y0, y1 + 1) for x in range(x0, x1 + 1)]
        outside_total = 0      # pixels outside every owned polygon, over the tiles
        render_bad = 0         # of those, drawn otherwise than with nothing owned
        png_pixels = {"montblanc-dem": 0, "montblanc-color": 0, "terrain": 0}   # of those, served in a 200 PNG
        png_bad = dict.fromkeys(png_pixels, 0)                                  # … with alpha ≠ 0
        partial = 0            # tiles with both owned and unowned pixel centres
        owned_changed = 0      # owned pixels drawn differently than with nothing owned (the purchase shows)
        for x, y in tiles:
            cx, cy = centres(z, x, y)
            own = np.zeros((SIDE, SIDE), dtype=bool)
            for rings, zooms in owned:
                if z in zooms:
                    own |= inside(rings, cx, cy)
            out = ~own
            n_out = int(out.sum())
            if 0 < n_out < SIDE * SIDE:
                partial += 1
            a = render(owned_ledger, z, x, y, os.path.join(work, "owned.png"))
            if n_out:
                b = render(none_ledger, z, x, y, os.path.join(work, "none.png"))
                outside_total += n_out
                render_bad += int((a[out] != b[out]).any(axis=1).sum())
                owned_changed += int((a[own] != b[own]).any(axis=1).sum())
            for region in ("montblanc-dem", "montblanc-color"):
                status, body = fetch(f"/tiles/{region}/{z}/{x}/{y}.png")
                if status == 200 and n_out:
                    rgba = np.asarray(Image.open(io.BytesIO(body)).convert("RGBA"))
                    png_pixels[region] += n_out
                    png_bad[region] += int((rgba[..., 3][out] != 0).sum())
                elif status not in (200, 403, 404):
                    png_bad[region] += n_out or 1
                    print(f"     /tiles/{region}/{z}/{x}/{y}.png answered {status}: {body[:200]!r}")
            status, body = fetch(f"/terrain/montblanc-dem/{z}/{x}/{y}.png")
            if status == 200 and n_out:
                rgba = np.asarray(Image.open(io.BytesIO(body)).convert("RGBA"))
                png_pixels["terrain"] += n_out
                png_bad["terrain"] += int((rgba[..., 3][out] != 0).sum())
            elif status not in (200, 403, 404):
                png_bad["terrain"] += n_out or 1
                print(f"     /terrain/montblanc-dem/{z}/{x}/{y}.png answered {status}: {body[:200]!r}")
        print(f"z{z}: {len(tiles)} tiles ({partial} across an owned edge), {outside_total} pixels outside every owned polygon: "
              f"{render_bad} drawn otherwise than with nothing owned; "
              + ", ".join(f"{k} {png_pixels[k]} served, {png_bad[k]} not transparent" for k in png_pixels))
        return {"outside": outside_total, "render_bad": render_bad, "png_pixels": png_pixels, "png_bad": png_bad,
                "partial": partial, "owned_changed": owned_changed}


@pytest.fixture(scope="module", params=ZOOMS, ids=[f"z{z}" for z in ZOOMS])
def zoom(request, tilepack, state):
    store, server = state
    return request.param, Edge(tilepack, store, server.port).zoom(request.param)


def test_render_tile_draws_all_unowned_pixels_as_with_nothing_owned(zoom):
    z, r = zoom
    assert r["render_bad"] == 0 and r["outside"] > 0, \
        f"z{z}: render --tile draws all {r['outside']} unowned pixels as with nothing owned ({r['render_bad']} differ)"


@pytest.mark.parametrize("region", ["montblanc-dem", "montblanc-color"])
def test_tiles_give_alpha_0_to_all_unowned_pixels_they_serve(zoom, region):
    """/tiles/{region}/…png gives alpha 0 to all unowned pixels it serves"""
    z, r = zoom
    assert r["png_bad"][region] == 0, \
        f"z{z}: /tiles/{region}/…png: {r['png_bad'][region]} of {r['png_pixels'][region]} unowned pixels not alpha 0"


def test_terrain_gives_nodata_to_all_unowned_samples_it_serves(zoom):
    z, r = zoom
    assert r["png_bad"]["terrain"] == 0, \
        f"z{z}: /terrain: {r['png_bad']['terrain']} of {r['png_pixels']['terrain']} unowned samples not nodata"


def test_the_tiles_cross_an_owned_edge_and_owning_shows(zoom):
    z, r = zoom
    assert r["partial"] > 0 and r["owned_changed"] > 0, \
        f"z{z}: {r['partial']} tiles across an owned edge, {r['owned_changed']} owned pixels drawn open"
