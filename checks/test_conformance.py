"""Conformance of tilepack's TIFF reader against a test-data manifest.

    [CONFORMANCE_DIR=DIR] python3 -m pytest checks/test_conformance.py
    (DIR holds manifest.jsonl and the <set>/<name> files; default ../shared/testdata)

Runs `tilepack info DIR/<set>/<name> --json --checksum` for every manifest line (one test per
file). A file either matches (every check below passes), or is declined (exit 2 with one line on
stderr); anything else is a failure. At least MIN_MATCHED (default 55) files must match (a test
of its own); -s prints the tallies and the colour modes chosen. Needs only python3's stdlib.
"""
import json
import os
import sqlite3
import subprocess
import tempfile

import pytest

from checks.lib.common import TESTDATA

DIR = os.environ.get("CONFORMANCE_DIR", TESTDATA)
TIMEOUT = float(os.environ.get("CONFORMANCE_TIMEOUT", "30"))
MIN_MATCHED = int(os.environ.get("MIN_MATCHED", "55"))
BIN = None  # the binary, set by the results fixture


def manifest():
    path = os.path.join(DIR, "manifest.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


ENTRIES = manifest()
LABELS = [f'{m["set"]}/{m["name"]}' for m in ENTRIES]


# Per-file checks: each takes (manifest entry, info JSON) and returns None when it passes or a
# short reason when it fails. Later stages add checks by appending to CHECKS.
def check_shape(m, info):
    for key in ("width", "height", "bands", "dtype"):
        if info.get(key) != m.get(key):
            return f"{key} {info.get(key)!r} != manifest {m.get(key)!r}"

def check_pixels(m, info):
    if info.get("pixel_sha256") != m.get("pixel_sha256"):
        bands = info.get("band_sha256") or []
        bad = [i + 1 for i, (a, b) in enumerate(zip(bands, m.get("band_sha256", []))) if a != b]
        return f"pixel_sha256 differs (bands {bad})"

# Georeferencing (Geo stage): where GDAL names an EPSG code, ours must equal it or the CRS must
# be cleanly declined (crs_error set); lon/lat bounds must agree within BOUNDS_TOL degrees when
# the datum is WGS 84-compatible (no datum_note).
BOUNDS_TOL = 1e-4
crs_tally = {"crs_matched": 0, "crs_declined": 0, "bounds_matched": 0}

def check_crs(m, info):
    crs = m.get("crs") or ""
    if not crs.startswith("EPSG:"):
        return None
    code = int(crs.split(":")[1])
    if info.get("crs_error"):
        crs_tally["crs_declined"] += 1
        return None
    if info.get("epsg") != code:
        return f"epsg {info.get('epsg')!r} != manifest {code}"
    crs_tally["crs_matched"] += 1
    gdal = m.get("bounds_4326")
    ours = info.get("bounds_lonlat")
    if gdal and ours is not None and info.get("datum_note") is None:
        worst = max(abs(a - b) for a, b in zip(ours, gdal))
        if worst > BOUNDS_TOL:
            return f"bounds_lonlat {ours} differ from GDAL {gdal} by {worst:.2e} deg"
        crs_tally["bounds_matched"] += 1

# Build (the Build and Archive stages): every file whose CRS is supported must build into an
# archive (PNG tiles: the debug build's PVRTC quality encoder is too slow for CI) that SQLite
# finds intact; a declined CRS must have been reported by info already (crs_error).
BUILD_TIMEOUT = float(os.environ.get("CONFORMANCE_BUILD_TIMEOUT", "120"))
build_tally = {"built": 0, "tiles": 0}
colour_modes = {}  # label -> the summary's "colour: MODE (reason)" text

def check_build(m, info):
    if info.get("bounds_lonlat") is None:
        return None
    path = os.path.join(DIR, m["set"], m["name"])
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.mbtiles")
        try:
            p = subprocess.run([BIN, "build", path, "-o", out, "--codec", "png", "--quiet"],
                               capture_output=True, text=True, timeout=BUILD_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"build timed out after {BUILD_TIMEOUT:.0f}s"
        if p.returncode != 0:
            return f"build exit {p.returncode}: {p.stderr.strip()}"
        for line in p.stdout.splitlines():
            if line.strip().startswith("colour: "):
                colour_modes[f'{m["set"]}/{m["name"]}'] = line.strip()[len("colour: "):]
        db = sqlite3.connect(out)
        try:
            if db.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
                return "built archive fails PRAGMA integrity_check"
            keys = dict(db.execute("SELECT name, value FROM metadata"))
            missing = [k for k in ("name", "format", "bounds", "center", "minzoom", "maxzoom", "type",
                                   "version", "description", "attribution") if k not in keys]
            if missing:
                return f"archive metadata lacks {missing}"
            build_tally["tiles"] += db.execute("SELECT count(*) FROM tiles").fetchone()[0]
        finally:
            db.close()
    build_tally["built"] += 1

CHECKS = [check_shape, check_pixels, check_crs, check_build]


def classify(m):
    """("OK" | "DECLINED" | "FAIL", detail) of one manifest entry."""
    path = os.path.join(DIR, m["set"], m["name"])
    try:
        p = subprocess.run([BIN, "info", path, "--json", "--checksum"], capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return "FAIL", f"timed out after {TIMEOUT:.0f}s"
    err = p.stderr.strip()
    if p.returncode == 2 and err and "\n" not in err and not p.stdout.strip():
        return "DECLINED", err
    if p.returncode != 0:
        return "FAIL", f"exit {p.returncode}: {err.splitlines()[-1] if err else ''}"
    try:
        info = json.loads(p.stdout)
    except ValueError as e:
        return "FAIL", f"output is not JSON ({e})"
    reasons = [r for r in (check(m, info) for check in CHECKS) if r]
    if reasons:
        return "FAIL", "; ".join(reasons)
    return "OK", ""


@pytest.fixture(scope="module")
def results(tilepack):
    global BIN
    BIN = tilepack
    assert ENTRIES, f"no manifest.jsonl in {DIR}"
    out = {}
    for m, label in zip(ENTRIES, LABELS):
        out[label] = classify(m)
        print(f"{out[label][0]:8} {label}" + (f": {out[label][1]}" if out[label][1] else ""))
    print("georeferencing: {crs_matched} EPSG codes matched GDAL, {crs_declined} CRSs declined, "
          "{bounds_matched} lon/lat bounds within 1e-4 deg".format(**crs_tally))
    print("build: {built} georeferenced files built into intact archives ({tiles} tiles)".format(**build_tally))
    modes = {}
    for text in colour_modes.values():
        modes[text.split(" ")[0]] = modes.get(text.split(" ")[0], 0) + 1
    print("colour modes chosen by --color auto: " + ", ".join(f"{k} {v}" for k, v in sorted(modes.items())))
    for label, text in sorted(colour_modes.items()):
        if text.startswith("elevation"):
            print(f"  {label}: {text}")
    counts = {k: sum(1 for v in out.values() if v[0] == k) for k in ("OK", "DECLINED", "FAIL")}
    print(f"{counts['OK']} matched, {counts['DECLINED']} declined, {counts['FAIL']} failed")
    return out


@pytest.mark.parametrize("label", LABELS or ["(no manifest)"])
def test_file_matches_or_is_declined(results, label):
    """The file matches the manifest (shape, pixels, CRS and bounds, a build) or is declined in one line."""
    assert label in results, f"no manifest.jsonl in {DIR}"
    verdict, detail = results[label]
    assert verdict in ("OK", "DECLINED"), f"{label}: {detail}"


def test_at_least_min_matched_files_match(results):
    matched = sum(1 for v in results.values() if v[0] == "OK")
    assert matched >= MIN_MATCHED, f"{matched} matched, fewer than MIN_MATCHED={MIN_MATCHED}"
