"""Must-show 2 of issue 26: tilepack's datum shifts against PROJ itself (libproj.so.25 via
ctypes, the same proj.db and grids), the shift alone — datum lon/lat → WGS 84 lon/lat, no
projection — at 200 seeded points inside each CRS's area of use:

  31467  DHDN (base 4314)          PROJ's own choice, EPSG:4314 → 4326 (DHDN to WGS 84 (4), BETA2007.gsb)
  21781  CH1903 (4149)             +proj=hgridshift +grids=CHENYX06_etrs.gsb
  27200  NZGD49 (4272)             +proj=hgridshift +grids=nzgd2kgrid0005.gsb (NZGD49 → NZGD2000 = 2193's datum)
  2193   NZGD2000 (4167)           EPSG:1565 NZGD2000 to WGS 84 (1), the null transformation: no shift
  27572  NTF (Paris) (4807)        +proj=hgridshift +grids=ntf_r93.gsb on Greenwich longitudes
  27700  OSGB36 (4277)             EPSG:1314 OSGB36 to WGS 84 (6), Helmert (PROJ's choice: OSTN15 is not in Debian)
  2056   CH1903+ (4150)            EPSG:1676 CH1903+ to WGS 84 (1), Helmert (PROJ's choice)
  5514   S-JTSK (4156)             PROJ's per-point choice, EPSG:4156 → 4326 (S-JTSK to WGS 84 (3)/(4)/(5))
  23030  ED50 (4230), UTM 30N      PROJ's per-point choice among ED50 to WGS 84 (1) … (42)
  23032  ED50 (4230), UTM 32N      the same, across Norway, Denmark, Germany, Italy and offshore
  26711  NAD27 (4267), UTM 11N     a built-in code: PROJ's per-point choice among NAD27 to WGS 84 (…)

and PROJ's GeoTIFF grid format, read by tilepack's own TIFF reader:

  31467  DHDN (4314) with de_adv_BETA2007.tif made here by GDAL from BETA2007.gsb (gdal_translate
         of a VRT: PROJ's band descriptions, units, positive_value west) plus two appended
         subgrid IFDs with doubled and tripled shifts, one placed by grid_name/parent_grid_name,
         one by extent only; tilepack finds it by PROJ's name beside a proj.db link
         (`--proj-db DIR/proj.db`); PROJ reads the same file (+proj=hgridshift +grids=PATH).

Points are drawn in the CRS's area of use, and for a single EPSG operation in its area of use
too (outside it PROJ's crs_to_crs falls to a ballpark offset, which is not the comparison).

Grid cases must agree within 1 cm, Helmert cases within 1 mm, both ways: forward
`tilepack project --epsg BASE --inverse --wgs84` ("X Y" in the base geographic CRS's own
axes and units, always_xy: lon lat, grads from Paris for 4807 → WGS 84 lon lat) and inverse
`tilepack project --epsg BASE --wgs84` (PROJ's WGS 84 answer → back to X Y, against PROJ's
inverse of the same operation). The accuracy PROJ
reports for the operation it used (proj_coordoperation_get_accuracy) is printed per case.
Points where PROJ's grid has no value (outside the grid), or where PROJ's per-point choice
falls to a ballpark offset (outside every operation's area), are redrawn.

Usage: [DATUM_POINTS=N] [DATUM_SEED=S] [PROJ_DB=PATH] python3 -m pytest -s checks/test_datum_check.py
       (needs gdal_translate; BIN=path/to/tilepack to test another binary; default the debug build)
"""
import math
import os
import random
import subprocess

import pytest

from checks.lib.common import tilepack_bin
from checks.lib.proj_ctypes import Proj, ProjError

pytestmark = [pytest.mark.gdal, pytest.mark.usefixtures("tilepack")]

POINTS = int(os.environ.get("DATUM_POINTS", "200"))
SEED = int(os.environ.get("DATUM_SEED", "26"))
PROJ_DB = os.environ.get("PROJ_DB") or None
R = 6371008.8  # mean earth radius: angular differences as metres

HGRID = ("+proj=pipeline +step +proj=unitconvert +xy_in=deg +xy_out=rad "
         "+step +proj=hgridshift +grids={} +step +proj=unitconvert +xy_in=rad +xy_out=deg")
# (projected CRS, base geodetic CRS, PROJ reference: ("crs", target), ("op", EPSG code) or
# ("grid", file), tolerance m)
CASES = [
    (31467, 4314, ("crs", "EPSG:4326"), 0.01),
    (21781, 4149, ("grid", "CHENYX06_etrs.gsb"), 0.01),
    (27200, 4272, ("grid", "nzgd2kgrid0005.gsb"), 0.01),
    (2193, 4167, ("op", 1565), 0.01),
    (27572, 4807, ("grid", "ntf_r93.gsb"), 0.01),
    (27700, 4277, ("op", 1314), 0.001),
    (2056, 4150, ("op", 1676), 0.001),
    # PROJ's per-point choice among several Helmerts (proj_trans without an area of interest):
    # S-JTSK (5) in Czechia and (4) in Slovakia beside (3) over both; ED50's national ones
    # beside (1) over Europe, offshore areas never displacing an onshore one.
    (5514, 4156, ("crs", "EPSG:4326"), 0.001),
    (23030, 4230, ("crs", "EPSG:4326"), 0.001),
    (23032, 4230, ("crs", "EPSG:4326"), 0.001),
    # A code of tilepack's built-in table on a datum the table gives no shift: proj.db's
    # operations all the same (NAD27 to WGS 84 (3), 20 m, and the regional ones).
    (26711, 4267, ("crs", "EPSG:4326"), 0.001),
]
# A base CRS with a non-Greenwich meridian and its Greenwich twin on the same ellipsoid:
# points are drawn in Greenwich degrees; PROJ's longitude rotation gives the base's own axes.
GREENWICH_TWIN = {4807: 4275}


def metres(a, b):
    dlon = (a[0] - b[0] + 180) % 360 - 180
    c = math.cos(math.radians((a[1] + b[1]) / 2))
    return math.hypot(math.radians(a[1] - b[1]) * R, math.radians(dlon) * R * c)


def tilepack(args, points):
    text = "".join(f"{x!r} {y!r}\n" for x, y in points)
    r = subprocess.run([tilepack_bin(), *args], input=text, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"tilepack {' '.join(args)}: {(r.stderr.strip().splitlines() or ['exit ' + str(r.returncode)])[-1]}")
    rows = [tuple(float(v) for v in l.split()) for l in r.stdout.splitlines() if l.strip()]
    if len(rows) != len(points):
        raise RuntimeError(f"tilepack {' '.join(args)}: {len(rows)} lines for {len(points)} points")
    return rows


def ballpark(reference):
    """Whether PROJ's last point went through a ballpark offset: inside the CRS's area but
    outside every operation's (ED50 in the Arctic Ocean), where PROJ shifts nothing and
    tilepack applies the first operation that needs no grid — not the comparison."""
    try:
        return "Ballpark" in reference.last_used().name()
    except (ProjError, AttributeError):
        return False


def draw(proj, rng, aou, reference, n):
    """n Greenwich lon/lat points inside the area of use where PROJ's reference answers
    with a real operation."""
    w, s, e, nn = aou[:4]
    if e < w:
        e += 360
    points, answers, tries = [], [], 0
    while len(points) < n and tries < 50:
        tries += 1
        batch = [(((rng.uniform(w, e) + 180) % 360) - 180, rng.uniform(s, nn)) for _ in range(n)]
        for p in batch:
            q = reference.trans([p])[0]
            if len(points) < n and all(math.isfinite(v) for v in q) and not ballpark(reference):
                points.append(p)
                answers.append(q)
    return points, answers


VRT = """<VRTDataset rasterXSize="{w}" rasterYSize="{h}">
  <SRS>EPSG:4326</SRS>
  <GeoTransform>{x0!r}, {dx!r}, 0, {y0!r}, 0, {dy!r}</GeoTransform>
  <Metadata><MDI key="TYPE">HORIZONTAL_OFFSET</MDI>{names}</Metadata>
  <VRTRasterBand dataType="Float32" band="1">
    <Description>latitude_offset</Description><UnitType>arc-second</UnitType>{src1}
  </VRTRasterBand>
  <VRTRasterBand dataType="Float32" band="2">
    <Description>longitude_offset</Description><UnitType>arc-second</UnitType>
    <Metadata><MDI key="positive_value">west</MDI></Metadata>{src2}
  </VRTRasterBand>
</VRTDataset>
"""


def geotiff_grid(directory, gsb):
    """PROJ's de_adv_BETA2007.tif made from BETA2007.gsb: the grid, a child named by
    parent_grid_name with doubled shifts, and an unnamed child (placed by extent) tripled."""
    info = subprocess.run(["gdalinfo", gsb], capture_output=True, text=True, check=True).stdout
    w, h = (int(v) for v in info.split("Size is ", 1)[1].split("\n", 1)[0].split(", "))
    x0, y0 = (float(v) for v in info.split("Origin = (", 1)[1].split(")", 1)[0].split(","))
    dx, dy = (float(v) for v in info.split("Pixel Size = (", 1)[1].split(")", 1)[0].split(","))
    out = os.path.join(directory, "de_adv_BETA2007.tif")
    parts = [(0, 0, w, h, 1, '<MDI key="grid_name">DHDN90</MDI>'),
             (20, 33, 13, 21, 2, '<MDI key="grid_name">CHILD</MDI><MDI key="parent_grid_name">DHDN90</MDI>'),
             (40, 10, 9, 15, 3, "")]
    for i, (cx, cy, cw, ch, scale, names) in enumerate(parts):
        src = lambda b: (f"<ComplexSource><SourceFilename>{gsb}</SourceFilename><SourceBand>{b}</SourceBand>"
                         f'<SrcRect xOff="{cx}" yOff="{cy}" xSize="{cw}" ySize="{ch}"/>'
                         f'<DstRect xOff="0" yOff="0" xSize="{cw}" ySize="{ch}"/><ScaleRatio>{scale}</ScaleRatio></ComplexSource>')
        vrt = os.path.join(directory, f"part{i}.vrt")
        with open(vrt, "w") as f:
            f.write(VRT.format(w=cw, h=ch, x0=x0 + cx * dx, dx=dx, y0=y0 + cy * dy, dy=dy, names=names,
                               src1=src(1), src2=src(2)))
        subprocess.run(["gdal_translate", "-q", *(["-co", "APPEND_SUBDATASET=YES"] if i else []), vrt, out], check=True)
    return out


def compare(label, proj, tol, reference, points, expected, base, db_args, operation, acc, to_axes=None):
    """tilepack forward and inverse against PROJ's answers for the same points."""
    inverse = reference.trans(expected, inverse=True)
    axes = to_axes.trans(points) if to_axes else points
    try:
        describe = subprocess.run([tilepack_bin(), "project", "--epsg", str(base), "--describe", *db_args],
                                  capture_output=True, text=True, timeout=60).stdout.splitlines()
        got = tilepack(["project", "--epsg", str(base), "--inverse", "--wgs84", *db_args], axes)
        back = tilepack(["project", "--epsg", str(base), "--wgs84", *db_args], expected)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        pytest.fail(f"{label}: tilepack: {e}")
    fwd = max(metres(g, q) if all(math.isfinite(v) for v in g) else math.inf for g, q in zip(got, expected))
    if to_axes:  # grads from Paris: back to Greenwich degrees to measure
        back = to_axes.trans(back, inverse=True)
    inv = max(metres(b, x) if all(math.isfinite(v) for v in b) else math.inf for b, x in zip(back, inverse))
    mine = next((l.split("datum transformation ", 1)[1].split("; unit")[0] for l in describe if "datum transformation " in l),
                "no datum transformation")
    detail = (f"{label} vs PROJ {operation} (PROJ accuracy {acc}): {len(points)} points within {tol * 1000:g} mm: "
              f"worst forward {fwd * 1000:.3f} mm, inverse {inv * 1000:.3f} mm; tilepack: {mine}")
    print(detail)
    assert fwd < tol and inv < tol, detail


@pytest.fixture(scope="module")
def proj():
    with Proj(proj_db=PROJ_DB) as p:
        yield p


@pytest.mark.parametrize("code, base, reference_kind, tol", CASES, ids=[f"EPSG:{c[0]}" for c in CASES])
def test_datum_shift_agrees_with_proj(proj, code, base, reference_kind, tol):
    """tilepack's shift, forward and inverse, within the tolerance of PROJ's at the points."""
    kind, what = reference_kind
    db_args = ["--proj-db", PROJ_DB] if PROJ_DB else []
    label = f"EPSG:{code} (base EPSG:{base})"
    rng = random.Random(SEED * 100_003 + code)
    try:
        crs = proj.create(f"EPSG:{code}")
        assert crs.geodetic_crs().code() == str(base), f"{label}: base CRS: proj.db says base EPSG:{crs.geodetic_crs().code()}"
        aou = crs.area_of_use()
        twin = GREENWICH_TWIN.get(base, base)
        if kind == "grid":
            reference = proj.create(HGRID.format(what))
        elif kind == "op":
            reference = proj.operation(what)
            o = reference.area_of_use()
            aou = (max(aou[0], o[0]), max(aou[1], o[1]), min(aou[2], o[2]), min(aou[3], o[3]))
        else:
            reference = proj.crs_to_crs(f"EPSG:{twin}", what)
        points, expected = draw(proj, rng, aou, reference, POINTS)
        assert len(points) >= POINTS, f"{label}: points: only {len(points)} of {POINTS} inside {what}"
        used = reference.last_used() if kind == "crs" else reference
        accuracy = used.accuracy()
        operation = used.info()["description"] or what
        to_axes = proj.crs_to_crs(f"EPSG:{twin}", f"EPSG:{base}") if twin != base else None
    except ProjError as e:
        pytest.fail(f"{label}: PROJ: {e}")
    acc = f"{accuracy:g} m" if accuracy >= 0 else "unknown"
    compare(label, proj, tol, reference, points, expected, base, db_args, operation, acc, to_axes)


def test_geotiff_grid_with_subgrids_agrees_with_proj(proj, tmp_path):
    """PROJ's GeoTIFF grid format with subgrids, the same file for both."""
    label = "EPSG:31467 (base EPSG:4314) with de_adv_BETA2007.tif (3 IFDs)"
    gsb = os.path.join(os.path.dirname(PROJ_DB or "/usr/share/proj/proj.db"), "BETA2007.gsb")
    d = str(tmp_path)
    try:
        tif = geotiff_grid(d, gsb)
        os.symlink(os.path.abspath(PROJ_DB or "/usr/share/proj/proj.db"), os.path.join(d, "proj.db"))
        reference = proj.create(HGRID.format(tif))
        aou = proj.create("EPSG:31467").area_of_use()
        points, expected = draw(proj, random.Random(SEED), aou, reference, POINTS)
        # Points in each child, where its multiplied shifts must be the ones used.
        for (w, s, e, n) in [(8.9, 50.1, 10.7, 51.9), (12.2, 52.95, 13.45, 54.25)]:
            more, answers = draw(proj, random.Random(SEED + 1), (w, s, e, n), reference, POINTS // 4)
            points += more
            expected += answers
    except (ProjError, subprocess.CalledProcessError, OSError) as e:
        pytest.fail(f"{label}: setup: {e}")
    compare(label, proj, 0.01, reference, points, expected, 4314, ["--proj-db", os.path.join(d, "proj.db")],
            "+proj=hgridshift on the same file", "unknown")
