"""Must-show 1 of issue 26: every EPSG projected CRS tilepack accepts, against PROJ itself.

For every non-deprecated EPSG projected CRS in proj.db that tilepack accepts (`tilepack project
--list-codes --json`, or the bare `--list-codes` of a tilepack without the registry), 200 points
seeded by the code are drawn inside the CRS's area of use (proj.db's extent, Greenwich degrees;
an extent with west > east crosses the antimeridian) and converted both ways:

  forward   `tilepack project --epsg CODE` (Greenwich lon/lat degrees on the CRS's own datum)
            against PROJ's conversion alone: proj_create_crs_to_crs(base geographic CRS,
            projected CRS) normalised for visualisation (always_xy), fed the same points in
            the base CRS's own units and prime meridian (grads and Paris for NTF, Ferro...);
            error = distance in the CRS's units × the unit's metres.
  inverse   `tilepack project --epsg CODE --inverse` of PROJ's x/y against the seeded points
            PROJ's forward made them from and against PROJ's own inverse, the nearer of the
            two per point; error = ground distance in metres (6371008.8 m radius). Some of
            PROJ 9.1's inverses are series that are themselves off by more than 1 mm (the
            authalic latitude of LAEA, Equal Earth, Lambert cylindrical equal area: 1.6 mm;
            Laborde: 52 mm), so an exact inverse would fail against PROJ's alone; the table's
            "PROJ's own inverse" column shows PROJ's distance from the seeded points.

PROJ is libproj.so.25 through ctypes (checks/lib/proj_ctypes.py): the same library and the
same proj.db the machine has. Points PROJ itself cannot convert are left out.

Also UTM 33N over 20°W–50°E (±35° from its central meridian), 2,000 points (from proj-check).

Pass: worst forward and worst inverse error < 1 mm for every CRS checked, no point PROJ
converts left unconverted by tilepack, and tilepack covering at least 95 % of proj.db's
non-deprecated EPSG projected CRSs (5,135 in EPSG v10.076). Every CRS whose method is one the
issue names (or one tilepack already computes) must be covered. Prints counts, a per-method
table (also written as Markdown with PROJ_REGISTRY_MARKDOWN=FILE, for BENCHMARKS.md) and every
failure (-s shows them).

Usage: [PROJ_REGISTRY_SAMPLE=N] [PROJ_REGISTRY_POINTS=200] [PROJ_REGISTRY_WORKERS=2]
       [PROJ_REGISTRY_CODES=A,B] [PROJ_DB=PATH] [PROJ_REGISTRY_MARKDOWN=FILE]
       python3 -m pytest -s checks/test_proj_registry_check.py
       (SAMPLE: N seeded CRSs plus the named national grids and one CRS of each method instead
       of all; .ci/run uses 400) BIN=path/to/tilepack (default the debug build of this checkout)
"""
import json
import math
import os
import sqlite3
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pytest

from checks.lib import proj_ctypes
from checks.lib.common import tilepack_bin

pytestmark = [pytest.mark.usefixtures("tilepack")]


def settings():
    e = os.environ.get
    return SimpleNamespace(sample=int(e("PROJ_REGISTRY_SAMPLE")) if e("PROJ_REGISTRY_SAMPLE") else None,
                           points=int(e("PROJ_REGISTRY_POINTS", "200")), workers=int(e("PROJ_REGISTRY_WORKERS", "2")),
                           codes=e("PROJ_REGISTRY_CODES") or None, proj_db=e("PROJ_DB") or None,
                           markdown=e("PROJ_REGISTRY_MARKDOWN") or None)


R = 6371008.8  # mean Earth radius: angular inverse errors in metres
SEED = 26
TOLERANCE = 1e-3  # metres
# Methods PROJ 9.1.1 cannot compute (it converts no point): nothing to compare with.
PROJ91_LACKS = {"Lambert Conic Conformal (West Orientated)", "Bonne (South Orientated)",
                "Polar Stereographic (variant C)", "Krovak Modified", "Krovak Modified (North Orientated)",
                "Lambert Conic Near-Conformal", "Transverse Mercator Zoned Grid System"}
# CRSs where PROJ 9.1.1 departs from the EPSG definition tilepack follows: (bound in metres, why).
KNOWN_DEPARTURES = {
    4087: (30_000, "PROJ < 9.8 computes Equidistant Cylindrical on a sphere of radius a (OSGeo/PROJ#4654)"),
    9311: (30_000, "PROJ 9.1 computes LAEA (Spherical) on the Clarke 1866 ellipsoid, not the authalic sphere (fixed in PROJ 9.2)"),
    31300: (1_000, "PROJ drops the 2SP Belgium method's 29.2985\" rotation (GN 7-2's example agrees with tilepack)"),
    8441: (0.02, "PROJ's labrd is a truncated series of EPSG's Laborde formula"),
    29701: (0.02, "PROJ's labrd is a truncated series of EPSG's Laborde formula"),
}

# The methods issue 26 names, spelled as proj.db's conversion_method.name spells them, plus the
# ones tilepack computed before it (TM, LCC 1SP/2SP, LAEA, Mercator A, Pseudo-Mercator, PS A/B).
ISSUE_METHODS = {
    "Albers Equal Area", "Oblique Stereographic", "Hotine Oblique Mercator (variant A)",
    "Hotine Oblique Mercator (variant B)", "Krovak", "Krovak (North Orientated)", "Cassini-Soldner",
    "Lambert Conic Conformal (1SP variant B)", "Lambert Conic Conformal (2SP Belgium)",
    "Transverse Mercator (South Orientated)", "Equidistant Cylindrical", "Lambert Cylindrical Equal Area",
    "Polar Stereographic (variant A)", "Polar Stereographic (variant B)", "Polar Stereographic (variant C)",
    "Mercator (variant A)", "Mercator (variant B)", "New Zealand Map Grid", "Equal Earth",
    "Transverse Mercator", "Lambert Conic Conformal (1SP)", "Lambert Conic Conformal (2SP)",
    "Lambert Azimuthal Equal Area", "Popular Visualisation Pseudo Mercator",
}
# National grids the issue names: always in a --sample run when tilepack accepts them.
NAMED = [27700, 2056, 21781, 28992, 31467, 31287, 2193, 5070, 3577, 2263, 3006, 3067, 2180, 5514, 2157, 6933]


def tilepack_codes(proj_db):
    """{code: method or None} tilepack accepts, and where the list came from."""
    extra = ["--proj-db", proj_db] if proj_db else []
    p = subprocess.run([tilepack_bin(), "project", "--list-codes", "--json", *extra], capture_output=True, text=True)
    if p.returncode == 0:
        return {int(e["code"]): e.get("method") for e in json.loads(p.stdout)}, "--list-codes --json"
    p = subprocess.run([tilepack_bin(), "project", "--list-codes", *extra], capture_output=True, text=True, check=True)
    return {int(c): None for c in p.stdout.split()}, "--list-codes (no --json: a tilepack without the registry)"


def projected_crs(db_path):
    """[(code, name, method)] of proj.db's non-deprecated EPSG projected CRSs."""
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return [(int(c), n, m) for c, n, m in con.execute(
            "SELECT p.code, p.name, m.name FROM projected_crs p "
            "JOIN conversion_table c ON c.auth_name = p.conversion_auth_name AND c.code = p.conversion_code "
            "JOIN conversion_method m ON m.auth_name = c.method_auth_name AND m.code = c.method_code "
            "WHERE p.auth_name = 'EPSG' AND p.deprecated = 0 ORDER BY CAST(p.code AS INTEGER)")]
    finally:
        con.close()


def reference(ctx, code, n):
    """PROJ's side of one CRS: sample points and PROJ's forward/inverse, or an error string."""
    crs = ctx.create(f"EPSG:{code}")
    base = crs.geodetic_crs()
    op = ctx.crs_to_crs(base, crs)
    area = crs.area_of_use()
    if area is None:
        return {"error": "proj.db gives no area of use"}
    w, s, e, nn, _ = area
    if e < w:  # crosses the antimeridian
        e += 360
    rng = np.random.default_rng([SEED, code])
    lon = (rng.uniform(w, e, n) + 180) % 360 - 180
    lat = rng.uniform(s, nn, n)
    # PROJ's normalised input: the base CRS's own units (degree or grad) from its own prime
    # meridian; tilepack takes Greenwich degrees.
    pm = base.prime_meridian_degrees()
    units = {a[2]: a[3] for a in base.axes()}  # direction → radians per unit
    k_lon, k_lat = math.radians(1) / units["east"], math.radians(1) / units["north"]
    x, y = op.trans((lon - pm) * k_lon, lat * k_lat)
    ok = np.isfinite(x) & np.isfinite(y)
    lon, lat, x, y = lon[ok], lat[ok], x[ok], y[ok]
    # PROJ's own inverse, only to say how far it is from the points its forward came from.
    plon, plat = op.trans(x, y, inverse=True)
    plon, plat = plon / k_lon + pm, plat / k_lat
    metres = {a[3] for a in crs.axes()}
    if len(metres) != 1:
        return {"error": f"axes in different units {metres}"}
    # The inverse is held to the seeded points themselves (PROJ's forward of them is the input)
    # and to PROJ's own inverse; each point counts the nearer of the two.
    plon = (plon + 180) % 360 - 180
    return {"lon": lon, "lat": lat, "x": x, "y": y, "ix": x, "iy": y, "ilon": lon, "ilat": lat, "plon": plon, "plat": plat,
            "unit_m": metres.pop(), "dropped": int(n - lon.size), "proj_inv": float(np.nanmax(angular_m(plon, plat, lon, lat)))
            if lon.size else 0.0}


def angular_m(lon, lat, lon0, lat0):
    """Ground distance in metres between lon/lat points (degrees), small-distance form."""
    dlon = (lon - lon0 + 180) % 360 - 180
    return R * np.hypot(np.radians(lat - lat0), np.radians(dlon) * np.cos(np.radians(lat0)))


def run_tilepack(code, a, b, inverse, proj_db):
    text = "".join(f"{float(u)!r} {float(v)!r}\n" for u, v in zip(a, b))
    args = [tilepack_bin(), "project", "--epsg", str(code)] + (["--inverse"] if inverse else []) + (["--proj-db", proj_db] if proj_db else [])
    p = subprocess.run(args, input=text, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"exit {p.returncode}: {(p.stderr.strip().splitlines() or ['?'])[0]}")
    vals = np.array(p.stdout.split(), dtype=np.float64)
    if vals.size != 2 * len(a):
        raise RuntimeError(f"{vals.size // 2} output lines for {len(a)} points")
    return vals[0::2], vals[1::2]


def measure(code, ref, proj_db):
    """(worst forward m, worst inverse m, points, problem or None) of one CRS."""
    tx, ty = run_tilepack(code, ref["lon"], ref["lat"], False, proj_db)
    ferr = np.hypot(tx - ref["x"], ty - ref["y"]) * ref["unit_m"]
    lon, lat = run_tilepack(code, ref["ix"], ref["iy"], True, proj_db)
    ierr = angular_m(lon, lat, ref["ilon"], ref["ilat"])
    if "plon" in ref:
        ierr = np.fmin(ierr, angular_m(lon, lat, ref["plon"], ref["plat"]))
    nan_f, nan_i = int(np.isnan(ferr).sum()), int(np.isnan(ierr).sum())
    problem = f"tilepack gave nan for {nan_f} forward / {nan_i} inverse points PROJ converts" if nan_f or nan_i else None
    fw = float(np.nanmax(ferr)) if ferr.size and nan_f < ferr.size else float("nan")
    iw = float(np.nanmax(ierr)) if ierr.size and nan_i < ierr.size else float("nan")
    return fw, iw, int(ferr.size), problem


def mm(v):
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v * 1000:.2g} mm"


def compare_registry(args):
    """Every finding: {key: (ok, detail)} (a key absent when the run does not check it), and crss."""
    out = {}
    t0 = time.time()

    ctx = proj_ctypes.Context(database=args.proj_db)
    db = ctx.database_path
    epsg_version = ctx.database_metadata("EPSG.VERSION")
    crss = projected_crs(db)
    method_of = {c: m for c, _, m in crss}
    name_of = {c: n for c, n, _ in crss}
    accepted, list_source = tilepack_codes(args.proj_db)
    covered = [c for c, _, _ in crss if c in accepted]
    print(f"PROJ {proj_ctypes.version()}, {db} (EPSG {epsg_version}); tilepack {tilepack_bin()} via {list_source}")
    print(f"{len(crss)} non-deprecated EPSG projected CRSs; tilepack accepts {len(accepted)} codes, "
          f"{len(covered)} of them these CRSs ({100 * len(covered) / len(crss):.1f} %)")

    # tilepack's method names are proj.db's (the shared contract).
    named = {c: m for c, m in accepted.items() if m is not None and c in method_of}
    if named:
        wrong = [f"{c}: {m!r} vs proj.db {method_of[c]!r}" for c, m in named.items() if m != method_of[c]]
        out["methods named"] = (not wrong, "; ".join(wrong[:5]))

    todo = covered
    if args.codes:
        todo = [int(c) for c in args.codes.split(",")]
    elif args.sample is not None:
        rng = np.random.default_rng(SEED)
        rest = [c for c in covered if c not in NAMED]
        pick = rng.choice(len(rest), size=min(args.sample, len(rest)), replace=False) if rest else []
        # Every method at least once (its lowest code), so a sample still reaches each formula.
        first_of_method = {}
        for c in sorted(covered):
            first_of_method.setdefault(method_of.get(c), c)
        todo = sorted({c for c in NAMED if c in accepted} | {rest[i] for i in pick} | set(first_of_method.values()))

    # PROJ's references first (one thread: a PROJ context is single-threaded).
    refs, results = {}, {}
    for code in todo:
        try:
            refs[code] = reference(ctx, code, args.points)
        except proj_ctypes.ProjError as e:
            refs[code] = {"error": str(e)}
    t_ref = time.time() - t0

    def work(code):
        ref = refs[code]
        if "error" in ref:
            return code, (float("nan"), float("nan"), 0, "PROJ: " + ref["error"])
        if ref["lon"].size == 0:  # nothing to compare is not a pass
            return code, (float("nan"), float("nan"), 0, f"PROJ itself converted none of the {args.points} points")
        try:
            return code, measure(code, ref, args.proj_db)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            return code, (float("nan"), float("nan"), 0, f"tilepack: {e}")

    with ThreadPoolExecutor(max_workers=args.workers) as pool:
        for code, r in pool.map(work, todo):
            results[code] = r

    failures, departures, incomparable = [], [], []
    for code in todo:
        fw, iw, npts, problem = results[code]
        bad = problem is not None or not (fw < TOLERANCE and iw < TOLERANCE)
        if bad and npts == 0 and method_of.get(code) in PROJ91_LACKS:
            # PROJ 9.1 has no formula for the method: nothing to compare with. These are
            # verified by the Swift tests against GN 7-2's worked examples and PROJ ≥ 9.5.
            incomparable.append(code)
        elif bad and code in KNOWN_DEPARTURES and fw < KNOWN_DEPARTURES[code][0] and iw < KNOWN_DEPARTURES[code][0]:
            departures.append(f"EPSG:{code} [{method_of.get(code, '?')}]: {mm(fw)} / {mm(iw)}; {KNOWN_DEPARTURES[code][1]}")
        elif bad:
            failures.append(f"EPSG:{code} {name_of.get(code, '?')} [{method_of.get(code, '?')}]: "
                            f"worst forward {mm(fw)}, inverse {mm(iw)} over {npts} points"
                            + (f"; {problem}" if problem else ""))
    dropped = sum(refs[c].get("dropped", 0) for c in todo)

    # Per-method table.
    rows = {}
    for c, _, m in crss:
        r = rows.setdefault(m, {"total": 0, "covered": 0, "checked": 0, "fw": 0.0, "iw": 0.0, "failed": 0, "pi": 0.0})
        r["total"] += 1
        r["covered"] += c in accepted
    for code in todo:
        fw, iw, _, problem = results[code]
        r = rows.setdefault(method_of.get(code, "(not a proj.db projected CRS)"),
                            {"total": 0, "covered": 0, "checked": 0, "fw": 0.0, "iw": 0.0, "failed": 0, "pi": 0.0})
        r["checked"] += 1
        r["pi"] = max(r["pi"], refs[code].get("proj_inv", 0.0))
        r["fw"] = max(r["fw"], fw) if not math.isnan(fw) else r["fw"]  # failures are counted apart
        r["iw"] = max(r["iw"], iw) if not math.isnan(iw) else r["iw"]
        r["failed"] += problem is not None or not (fw < TOLERANCE and iw < TOLERANCE)
    header = (f"EPSG projected CRSs in proj.db ({os.path.basename(db)}, EPSG {epsg_version}, PROJ {proj_ctypes.version()}): "
              f"{len(covered)} of {len(crss)} covered ({100 * len(covered) / len(crss):.1f} %); "
              f"{len(todo)} checked × {args.points} points each way against PROJ's conversion (base geographic CRS ↔ projected)")
    lines = [header, "", "| method | CRSs | covered | checked | worst forward | worst inverse | failed | PROJ's own inverse |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m, r in sorted(rows.items(), key=lambda kv: (-kv[1]["total"], kv[0])):
        chk = r["checked"]
        lines.append(f"| {m} | {r['total']} | {r['covered']} | {chk} | {mm(r['fw']) if chk else '—'} | {mm(r['iw']) if chk else '—'} | {r['failed']} | {mm(r['pi']) if chk else '—'} |")
    table = "\n".join(lines)
    print("\n" + table + "\n")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")

    # Uncovered CRSs of methods the issue names (or tilepack had).
    missing = {}
    for c, n, m in crss:
        if m in ISSUE_METHODS and c not in accepted:
            missing.setdefault(m, []).append(c)
    for m in sorted(ISSUE_METHODS):
        if any(mm_ == m for _, _, mm_ in crss):
            miss = missing.get(m, [])
            out["method " + m] = (not miss, f"{m}: all {rows[m]['total']} proj.db CRSs covered: " +
                                  (f"{len(miss)} not accepted: {', '.join(map(str, miss[:12]))}{' …' if len(miss) > 12 else ''}" if miss else ""))
    unlisted = sorted({m for c, _, m in crss if c not in accepted and m not in ISSUE_METHODS})
    if unlisted:
        print(f"(not in the issue's list, not covered: {', '.join(unlisted)})")

    need = math.ceil(0.95 * len(crss))
    out["coverage"] = (len(covered) >= need, f"coverage ≥ 95 % of {len(crss)} ({need}): {len(covered)} covered")
    for f in failures[:200]:
        print("  " + f)
    if len(failures) > 200:
        print(f"  … and {len(failures) - 200} more")
    print(f"not comparable (PROJ 9.1 lacks the method; Swift tests check them against GN 7-2): "
          f"{len(incomparable)} CRSs: {', '.join(map(str, incomparable))}")
    print(f"known departures from PROJ 9.1, where tilepack follows EPSG's definition ({len(departures)}):")
    for d in departures:
        print("  " + d)
    if not args.codes and not args.sample:
        out["registry"] = (len(todo) - len(incomparable) - len(departures) - len(failures) >= math.ceil(0.95 * len(crss)),
                           f"{len(covered)} accepted CRSs compared with PROJ: {len(todo) - len(incomparable) - len(departures)} "
                           f"within 1 mm ({len(incomparable)} not comparable, {len(departures)} known departures), "
                           f"≥ 95 % of {len(crss)}")
    out["within 1 mm"] = (not failures, f"{len(todo)} CRSs within 1 mm of PROJ forward and inverse, apart from those listed "
                          f"({args.points} points each, {dropped} points PROJ itself could not convert left out): "
                          f"{len(failures)} CRSs fail: " + "; ".join(failures[:5]))
    # Transverse Mercator far beyond a zone (from Scripts/proj-check): UTM 33N (CM 15°E) out to
    # ±35° of longitude, where a short series would drift; PROJ's tmerc is exact there.
    if 32633 in accepted and not args.codes:
        rng = np.random.default_rng([SEED, 1])
        lon, lat = rng.uniform(-20, 50, 2000), rng.uniform(0, 84, 2000)
        ref = {"lon": lon, "lat": lat}
        op = ctx.crs_to_crs("EPSG:4326", "EPSG:32633")
        ref["x"], ref["y"] = op.trans(lon, lat)
        ref["ix"], ref["iy"] = ref["x"], ref["y"]
        ref["ilon"], ref["ilat"] = lon, lat
        ref["unit_m"] = 1.0
        fw, iw, n, problem = measure(32633, ref, args.proj_db)
        out["utm 33n"] = (problem is None and fw < TOLERANCE and iw < TOLERANCE,
                          f"worst forward {mm(fw)}, inverse {mm(iw)} over {n} points" + (f"; {problem}" if problem else ""))
    print(f"time: {time.time() - t0:.0f} s ({t_ref:.1f} s PROJ, {args.workers} workers)")
    out["crss"] = crss
    return out




@pytest.fixture(scope="module")
def registry():
    return compare_registry(settings())


def finding(registry, key, why_absent):
    if key not in registry:
        pytest.skip(why_absent)
    ok, detail = registry[key]
    assert ok, detail


def test_list_codes_json_names_each_crss_method_as_proj_db_does(registry):
    finding(registry, "methods named", "tilepack's --list-codes names no methods (no --json)")


@pytest.mark.parametrize("method", sorted(ISSUE_METHODS))
def test_every_proj_db_crs_of_the_issues_methods_is_covered(registry, method):
    """{method}: all proj.db CRSs covered"""
    finding(registry, "method " + method, f"proj.db has no CRS of the method {method}")


def test_coverage_at_least_95_percent(registry):
    finding(registry, "coverage", "")


def test_the_whole_registry_compared_with_proj(registry):
    """The accepted CRSs compared with PROJ: ≥ 95 % of proj.db's within 1 mm (a whole-registry run only)."""
    finding(registry, "registry", "a sample (PROJ_REGISTRY_SAMPLE or PROJ_REGISTRY_CODES): the whole-registry figure is not checked")


def test_crss_within_1_mm_of_proj_forward_and_inverse(registry):
    finding(registry, "within 1 mm", "")


def test_utm_33n_far_beyond_its_zone_within_1_mm_of_proj(registry):
    """EPSG:32633 from 20°W to 50°E (±35° from the central meridian) within 1 mm of PROJ"""
    finding(registry, "utm 33n", "tilepack does not accept EPSG:32633, or PROJ_REGISTRY_CODES names the codes")
