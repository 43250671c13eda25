"""Must-show 4 of issue 25: compact elevation (q-planar-deflate, tilepack:format_version 2).

For three DEMs: the Mont Blanc sample (int16), rio-rgbify's elev.tif (real float32) and a
float32 1 m DSM made here with `gdalwarp -tr 1 1 -r bilinear -ot Float32` from a 1 km window
of the Mont Blanc sample, the same binary builds each twice (`--codec png`): with the default
elevation storage and with `--elevation-encoding float32` (how tilepack stored elevation before
format version 2). Checks:
  - elevation bytes (sum of elevation.data lengths) at least 4x smaller; the ratio is printed;
  - metadata: format_version 2, elevation_encoding q-planar-deflate, the precision (1 for the
    int16 source, 0.01 for the float ones); the float32 archive says format_version 1;
  - at 300 random max-zoom points (pixel centres of tiles with elevation) the new archive holds
    exactly the old value quantised to the precision (so within precision/2 of it; NaN where it
    is NaN), decoded by an independent Python decoder of docs/FORMAT.md; integers exactly: a
    `--resampling nearest` build of the int16 sample (integer-valued tiles) gives bit-equal values;
  - `tilepack query --json` answers elevation_m within precision/2 (+ its cm rounding) of the
    old archive's answer at 5 of those points per DEM (each query is a process start).
Usage: python3 -m pytest checks/test_elevation_size_check.py  (BIN=path/to/tilepack to test another build)
"""
import json
import math
import os
import random
import time

import numpy as np
import pytest

from checks.lib import terrain as tc

pytestmark = [pytest.mark.gdal, pytest.mark.slow, pytest.mark.usefixtures("tilepack")]

rng = random.Random(25)  # one sequence over the cases, in order


def lonlat_of_pixel(z, x, y, px, py, side):
    w, s, e, n = tc.tile_bounds_3857(z, x, y)
    mx = w + (px + 0.5) * (e - w) / side
    my = n - (py + 0.5) * (n - s) / side
    lon = mx / 6378137.0 * 180 / math.pi
    lat = math.degrees(2 * math.atan(math.exp(my / 6378137.0)) - math.pi / 2)
    return lon, lat


def build(src, out, extra):
    t = time.time()
    tc.tilepack(["build", src, "-o", out, "--codec", "png", "--quiet"] + extra)
    return time.time() - t


def compare(new_path, old_path, step, points=300, exact=False):
    """Samples `points` random max-zoom pixels. Returns {"tiles": (ok, detail), "points": (ok,
    detail), "samples": the (lon, lat, z, old, new) of a few}."""
    meta = tc.archive_metadata(new_path)
    z = int(meta["maxzoom"])
    new, old = tc.archive_elevation(new_path, z), tc.archive_elevation(old_path, z)
    keys = sorted(set(new) & set(old))
    r = {"tiles": (bool(keys) and set(new) == set(old), f"{len(keys)} tiles at z{z}"), "samples": []}
    if not keys:
        r["points"] = (False, "no common tiles")
        return r
    bad, samples, valid = [], [], 0
    for i in range(points):
        k = rng.choice(keys)
        grid_new, grid_old = new[k][1], old[k][1]
        side = grid_new.shape[0]
        px, py = rng.randrange(side), rng.randrange(side)
        a, b = grid_old[py, px], grid_new[py, px]
        if np.isnan(a) or np.isnan(b):
            ok = np.isnan(a) and np.isnan(b)
        else:
            valid += 1
            x = np.float64(a) / step  # rounded half away from zero, as the writer rounds
            want = a if exact else np.float32(np.sign(x) * np.floor(abs(x) + 0.5) * step)
            ok = want.view(np.uint32) == b.view(np.uint32) and abs(float(a) - float(b)) <= step / 2 + 1e-6 * max(1, abs(float(a)))
            if len(samples) < 5:
                samples.append((*lonlat_of_pixel(z, k[1], k[2], px, py, side), z, float(a), float(b)))
        if not ok:
            bad.append((k, px, py, float(a), float(b)))
    how = "bit-equal" if exact else f"old value quantised to {step:g} (|diff| <= {step / 2:g})"
    r["points"] = (not bad, f"{points} random points {how}: " +
                   (f"{valid} with data, {points - valid} NaN in both" if not bad else f"{len(bad)} differ, e.g. {bad[:3]}"))
    r["samples"] = samples
    return r


def query_elevation(path, lat, lon, z):
    p = tc.tilepack(["query", f"{lat:.10f}", f"{lon:.10f}", str(z), "--archive", path, "--json"], check=False)
    lines = [line for line in p.stdout.splitlines() if line.strip().startswith("{")]
    return json.loads(lines[0]).get("elevation_m") if lines else None



CASES = [("Mont Blanc int16", "montblanc", 1.0), ("rio-rgbify elev float32", "elev", 0.01),
         ("1 m DSM float32 (gdalwarp -tr 1 1)", "dsm", 0.01)]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return str(tmp_path_factory.mktemp("elev-size-check"))


@pytest.fixture(scope="module")
def sources(work, testdata, sample_regions):
    dsm = os.path.join(work, "dsm-1m.tif")
    tc.run(["gdalwarp", "-q", "-overwrite", "-tr", "1", "1", "-r", "bilinear", "-ot", "Float32",
            "-te", "330000", "5080000", "330750", "5080750", os.path.join(sample_regions, "montblanc-dem.tif"), dsm])
    return {"montblanc": os.path.join(sample_regions, "montblanc-dem.tif"),
            "elev": os.path.join(testdata, "geotiff/rio-rgbify__elev.tif"), "dsm": dsm}


@pytest.fixture(scope="module", params=CASES, ids=[c[1] for c in CASES])
def case(request, work, sources):
    """One DEM built twice (default elevation storage, --elevation-encoding float32) and compared."""
    label, key, step = request.param
    src = sources[key]
    assert os.path.exists(src), f"{label}: source missing: {src}"
    new_path, old_path = os.path.join(work, f"{key}-new.mbtiles"), os.path.join(work, f"{key}-old.mbtiles")
    r = {"label": label, "step": step, "new": new_path, "old": old_path}
    r["t_new"] = build(src, new_path, [])
    r["t_old"] = build(src, old_path, ["--elevation-encoding", "float32"])
    r["compare"] = compare(new_path, old_path, step)
    return r


def test_elevation_bytes_at_least_4x_smaller(case):
    nb, ob = tc.elevation_bytes(case["new"]), tc.elevation_bytes(case["old"])
    ratio = ob / nb if nb else float("inf")
    print(f"     {case['label']}: elevation bytes {ob} -> {nb}, {ratio:.2f}x smaller")
    assert ratio >= 4, f"{case['label']}: elevation bytes {ob} -> {nb}, {ratio:.2f}x smaller; " \
                       f"builds {case['t_new']:.1f} s / {case['t_old']:.1f} s"


def test_metadata_format_version_2_q_planar_deflate_precision(case):
    meta = tc.archive_metadata(case["new"])
    assert meta.get("tilepack:format_version") == "2" and meta.get("tilepack:elevation_encoding") == "q-planar-deflate" \
        and float(meta.get("tilepack:elevation_precision", "nan")) == case["step"], \
        str({k: v for k, v in meta.items() if "elevation" in k or "format_version" in k})


def test_the_float32_archive_says_format_version_1(case):
    old_meta = tc.archive_metadata(case["old"])
    assert old_meta.get("tilepack:format_version") == "1" and "tilepack:elevation_precision" not in old_meta


def test_same_max_zoom_elevation_tiles(case):
    ok, detail = case["compare"]["tiles"]
    assert ok, detail


def test_random_points_hold_the_old_value_quantised(case):
    ok, detail = case["compare"]["points"]
    assert ok, detail


def test_tilepack_query_json_elevation_m_agrees(case):
    step, samples = case["step"], case["compare"]["samples"]
    bad = []
    for lon, lat, z, a, b in samples:
        qo, qn = query_elevation(case["old"], lat, lon, z), query_elevation(case["new"], lat, lon, z)
        if qo is None or qn is None or abs(qo - qn) > step / 2 + 0.0051 or abs(qn - b) > 0.0051:
            bad.append((lat, lon, qo, qn, b))
    assert samples and not bad, f"{len(samples)} points: {bad[:3]}"


@pytest.fixture(scope="module")
def nearest(work, sources):
    """Integer-valued tiles (nearest resampling of the int16 source) come back bit for bit."""
    src = sources["montblanc"]
    near_new, near_old = os.path.join(work, "near-new.mbtiles"), os.path.join(work, "near-old.mbtiles")
    zoom = ["--min-zoom", "12", "--max-zoom", "12", "--resampling", "nearest"]
    build(src, near_new, zoom)
    build(src, near_old, zoom + ["--elevation-encoding", "float32"])
    # Not a Must-show figure (printed only): Float32 of integer-valued samples compresses well too.
    print(f"     (nearest, z12 only: elevation bytes {tc.elevation_bytes(near_old)} -> {tc.elevation_bytes(near_new)})")
    return compare(near_new, near_old, 1.0, exact=True)


def test_mont_blanc_nearest_same_max_zoom_elevation_tiles(nearest):
    """Mont Blanc int16, nearest: same max-zoom elevation tiles"""
    ok, detail = nearest["tiles"]
    assert ok, detail


def test_mont_blanc_nearest_random_points_bit_equal(nearest):
    """Mont Blanc int16, nearest: 300 random points bit-equal"""
    ok, detail = nearest["points"]
    assert ok, detail
