"""Must-show 2 of issue 25: colour by what the band holds.

Builds every georeferenced GeoTIFF of ../shared/testdata (those GDAL reports no CRS for are
skipped, and listed) plus fixtures written here with GDAL from real pixels of those files:

  percent.tif   float32, UNITTYPE %, 0…100        (rio-rgbify elev.tif rescaled)
  classes.tif   int16, 14 classes 1…14, DESCRIPTION Land cover (elev.tif quantised); classes-plain.tif without it
  depth.tif     float32, DESCRIPTION Depth, −2340…−19 m   (elev.tif rescaled)
  depth-pos.tif float32, DESCRIPTION Depth, 19…2340 (positive depths: negated by the build)
  stack6.tif    6 bands Landsat order B,G,R,NIR,SWIR1,SWIR2 with descriptions
                (rasterio RGB.byte.tif's R,G,B plus three derived bands)
  stack6-plain.tif the same without descriptions; stack6-bgr.vrt = gdal_translate -of VRT -b 3 -b 2 -b 1

prints a table (file, colour mode, value kind, reason) and checks: no percent/class/depth
raster drawn as land terrain; depth uses bathymetry (the decision: the bathymetric ramp's
rendering is the tint helper's part); `--bands 3,2,1` (and the named bands, and the VRT)
give natural colour (tiles identical to RGB.byte.tif's own build, and correlated with
GDAL's warp of its R,G,B bands); `--bands` naming a band the file lacks is a one-line usage
error; `query` on classes answers the class exactly (against gdallocationinfo); metadata
keys tilepack:value_kind, tilepack:color_mode, tilepack:legend.

Usage: python3 -m pytest -s checks/test_band_kinds_check.py   (BIN=path/to/tilepack to test another build;
-s shows the table)
"""
import json
import xml.etree.ElementTree as ET
import math
import os
import random

import numpy as np
import pytest

from checks.lib.common import data_root
from checks.lib.terrain import archive_metadata, archive_tiles, png_rgba, read_raster, run, tile_bounds_3857, tilepack

pytestmark = [pytest.mark.gdal, pytest.mark.usefixtures("tilepack")]

FIXTURES = ["percent", "classes", "classes-plain", "depth", "depth-pos", "stack6", "stack6-plain", "stack6-bgr.vrt"]


def elev_path():
    return os.path.join(data_root(), "geotiff", "rio-rgbify__elev.tif")


def rgb_path():
    return os.path.join(data_root(), "geotiff", "rasterio__RGB.byte.tif")


def vrt_with_bands(src_vrt, out_tif, edit, ot=None):
    """gdal_translate a VRT after `edit(root)` changed its XML, to a GeoTIFF (GDAL writes band
    Description/UnitType/ColorInterp into GDAL_METADATA)."""
    tree = ET.parse(src_vrt)
    edit(tree.getroot())
    tree.write(src_vrt)
    run(["gdal_translate", "-q", "-co", "TILED=YES"] + (["-ot", ot] if ot else []) + [src_vrt, out_tif])


def set_band(root, n, description=None, unit=None, colorinterp=None):
    band = root.findall("VRTRasterBand")[n - 1]
    for tag, text in (("Description", description), ("UnitType", unit), ("ColorInterp", colorinterp)):
        if text is None:
            continue
        e = band.find(tag)
        if e is None:
            e = ET.Element(tag)
            band.insert(0, e)
        e.text = text


def make_fixtures(d):
    """The fixtures, from real pixels (elev.tif: 0.436…114.921 m; RGB.byte.tif)."""
    ELEV, RGB = elev_path(), rgb_path()
    lo, hi = 0.436, 114.921
    out = {}
    # Percent: elevation rescaled to 0…100, float32, UNITTYPE %.
    v = os.path.join(d, "percent.vrt")
    run(["gdal_translate", "-q", "-of", "VRT", "-ot", "Float32", "-scale", str(lo), str(hi), "0", "100", ELEV, v])
    vrt_with_bands(v, os.path.join(d, "percent.tif"), lambda r: set_band(r, 1, description="Sea ice concentration", unit="%"))
    out["percent"] = os.path.join(d, "percent.tif")
    # Classes: 14 elevation bands as int16 codes 1…14.
    v = os.path.join(d, "classes.vrt")
    run(["gdal_translate", "-q", "-of", "VRT", "-ot", "Int16", "-scale", str(lo), str(hi), "1", "14.49", ELEV, v])
    out["classes-plain"] = os.path.join(d, "classes-plain.tif")  # no description: the ≤ 32 integer values decide
    run(["gdal_translate", "-q", "-co", "TILED=YES", v, out["classes-plain"]])
    vrt_with_bands(v, os.path.join(d, "classes.tif"), lambda r: set_band(r, 1, description="Land cover"))
    out["classes"] = os.path.join(d, "classes.tif")
    # Depth: −2340 (deepest) … −19 m, description Depth; and the same as positive depths.
    v = os.path.join(d, "depth.vrt")
    run(["gdal_translate", "-q", "-of", "VRT", "-ot", "Float32", "-scale", str(lo), str(hi), "-2340", "-19", ELEV, v])
    vrt_with_bands(v, os.path.join(d, "depth.tif"), lambda r: set_band(r, 1, description="Depth", unit="m"))
    out["depth"] = os.path.join(d, "depth.tif")
    v = os.path.join(d, "depth-pos.vrt")
    run(["gdal_translate", "-q", "-of", "VRT", "-ot", "Float32", "-scale", str(lo), str(hi), "2340", "19", ELEV, v])
    vrt_with_bands(v, os.path.join(d, "depth-pos.tif"), lambda r: set_band(r, 1, description="Depth"))
    out["depth-pos"] = os.path.join(d, "depth-pos.tif")
    # A 6-band Landsat-order stack: B, G, R from RGB.byte.tif, then three derived bands.
    names = ["Blue", "Green", "Red", "NIR", "SWIR1", "SWIR2"]
    # (source band, scale ratio, offset): NIR = 255 − green, SWIR1 = red / 2, SWIR2 = blue / 2 + 40.
    plan = [(3, 1, 0), (2, 1, 0), (1, 1, 0), (2, -1, 255), (1, 0.5, 0), (3, 0.5, 40)]
    bands_xml = []
    for i, (b, ratio, offset) in enumerate(plan, 1):
        bands_xml.append(f"""<VRTRasterBand dataType="Byte" band="{i}"><NoDataValue>0</NoDataValue>
  <ComplexSource><SourceFilename relativeToVRT="0">{RGB}</SourceFilename><SourceBand>{b}</SourceBand>
  <ScaleOffset>{offset}</ScaleOffset><ScaleRatio>{ratio}</ScaleRatio><NODATA>0</NODATA></ComplexSource></VRTRasterBand>""")
    info = json.loads(run(["gdalinfo", "-json", RGB]).stdout)
    w, h = info["size"]
    gt = ",".join(repr(x) for x in info["geoTransform"])
    srs = info["coordinateSystem"]["wkt"].replace("&", "&amp;").replace("<", "&lt;")
    stack_vrt = os.path.join(d, "stack6.vrt")
    with open(stack_vrt, "w") as f:
        f.write(f'<VRTDataset rasterXSize="{w}" rasterYSize="{h}"><SRS>{srs}</SRS><GeoTransform>{gt}</GeoTransform>'
                + "".join(bands_xml) + "</VRTDataset>")
    plain = os.path.join(d, "stack6-plain.tif")
    run(["gdal_translate", "-q", "-co", "TILED=YES", stack_vrt, plain])
    out["stack6-plain"] = plain

    def describe(root):
        for i, n in enumerate(names, 1):
            set_band(root, i, description=n)
    vrt_with_bands(stack_vrt, os.path.join(d, "stack6.tif"), describe)
    out["stack6"] = os.path.join(d, "stack6.tif")
    out["stack6-bgr.vrt"] = os.path.join(d, "stack6-bgr.vrt")
    run(["gdal_translate", "-q", "-of", "VRT", "-b", "3", "-b", "2", "-b", "1", plain, out["stack6-bgr.vrt"]])
    return out


def build(src, out, extra=()):
    """(returncode, summary lines, stderr) of a PNG build."""
    p = tilepack(["build", src, "-o", out, "--codec", "png", "--quiet", *extra], check=False)
    return p.returncode, p.stdout, p.stderr.strip()


def colour_line(stdout):
    """(mode, kind, reason) from the summary's `colour:` line (and its `bands:` line)."""
    bands = "".join("; bands " + l.strip()[len("bands: "):] for l in stdout.splitlines() if l.strip().startswith("bands: "))
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("colour: "):
            text = line[len("colour: "):]
            kind = "-"
            if "; values: " in text:
                text, rest = text.rsplit("; values: ", 1)
                # The terrain modes go on with "; tint: …; hillshade …".
                kind, _, style = rest.partition("; ")
                bands = (f"; {style}" if style else "") + bands
            mode, _, reason = text.partition(" (")
            return mode, kind, (reason[:-1] if reason.endswith(")") else reason) + bands
    return None, None, stdout.strip()[-200:]


def max_zoom_tiles(path):
    meta = archive_metadata(path)
    z = int(meta["maxzoom"])
    return z, {k: png_rgba(v) for k, v in archive_tiles(path, z).items()}


def mercator_to_lonlat(x, y):
    r = 6378137.0
    return math.degrees(x / r), math.degrees(2 * math.atan(math.exp(y / r)) - math.pi / 2)




# ---------------------------------------------------------------- the builds

@pytest.fixture(scope="module")
def d(tmp_path_factory):
    return str(tmp_path_factory.mktemp("bands-check"))


@pytest.fixture(scope="module")
def fixtures(d):
    return make_fixtures(d)


@pytest.fixture(scope="module")
def results(d, fixtures, testdata):
    """Every georeferenced GeoTIFF of the test data built (cheap zooms: the decision does not
    depend on them), each fixture built, the table printed. {name: (code, stdout, stderr, path)}."""
    rows, skipped, builds = [], [], {}
    for line in open(os.path.join(testdata, "manifest.jsonl")):
        m = json.loads(line)
        path = os.path.join(testdata, m["set"], m["name"])
        info = json.loads(run(["gdalinfo", "-json", path]).stdout)
        if not (info.get("coordinateSystem") or {}).get("wkt"):
            skipped.append(m["name"])
            continue
        code, out, err = build(path, os.path.join(d, "t.mbtiles"), ["--min-zoom", "2", "--max-zoom", "2"])
        if code != 0:
            rows.append((m["name"], "refused", "-", err.splitlines()[-1][:110] if err else f"exit {code}"))
            continue
        rows.append((m["name"],) + colour_line(out))
    for name in FIXTURES:
        out_path = os.path.join(d, name + ".mbtiles")
        code, out, err = build(fixtures[name], out_path)
        builds[name] = (code, out, err, out_path)
        if code == 0:
            rows.append(("fixture " + name,) + colour_line(out))
    out_path = os.path.join(d, "s321.mbtiles")
    code, out, err = build(fixtures["stack6-plain"], out_path, ["--bands", "3,2,1"])
    builds["s321"] = (code, out, err, out_path)
    if code == 0:
        rows.append(("fixture stack6-plain --bands 3,2,1",) + colour_line(out))
    out_path = os.path.join(d, "rgb.mbtiles")
    code, out, err = build(rgb_path(), out_path)
    builds["rgb"] = (code, out, err, out_path)
    print(f"\n{'file':58} {'mode':10} {'kind':9} reason")
    for r in rows:
        print(f"{r[0][:58]:58} {str(r[1]):10} {str(r[2]):9} {r[3]}")
    print(f"skipped (GDAL reports no CRS): {len(skipped)}: " + ", ".join(skipped))
    return builds


def built(results, name):
    """(archive path, summary) of a build the check needs; fails when it did not build."""
    code, out, err, path = results[name]
    assert code == 0, f"{name} did not build: {err}"
    return path, out


def decision(results, name):
    return colour_line(built(results, name)[1])


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_builds(results, name):
    code, out, err, path = results[name]
    assert code == 0, err


def test_stack6_plain_bands_3_2_1_builds(results):
    code, out, err, path = results["s321"]
    assert code == 0, err


def test_rgb_byte_tif_builds(results):
    code, out, err, path = results["rgb"]
    assert code == 0, err


@pytest.mark.parametrize("name, mode, kind", [("percent", "percent", "percent"), ("classes", "classes", "class"),
                                              ("classes-plain", "classes", "class"),
                                              ("depth", "bathymetry", "depth"), ("depth-pos", "bathymetry", "depth")])
def test_mode_and_kind_not_land_terrain(results, name, mode, kind):
    """{name}: mode {mode}, kind {kind}, not land terrain"""
    m, k, reason = decision(results, name)
    assert (m, k) == (mode, kind) and m != "elevation", f"got {m} / {k} ({reason})"


def test_depth_pos_positive_depths_negated(results):
    reason = decision(results, "depth-pos")[2]
    assert "negated" in reason, reason


@pytest.mark.parametrize("name", ["percent", "classes", "classes-plain", "depth", "depth-pos"])
def test_metadata_value_kind_color_mode(results, name):
    meta = archive_metadata(built(results, name)[0])
    assert meta.get("tilepack:value_kind") == decision(results, name)[1] \
        and meta.get("tilepack:color_mode") == decision(results, name)[0], \
        f"{meta.get('tilepack:value_kind')} / {meta.get('tilepack:color_mode')}"


# Classes: legend and exact query answers against gdallocationinfo.

@pytest.fixture(scope="module")
def classes(results, fixtures):
    path = built(results, "classes")[0]
    meta = archive_metadata(path)
    src = read_raster(fixtures["classes"])[0]
    return path, meta, src


def test_classes_legend_lists_every_class_with_value_label_rgba(classes):
    path, meta, src = classes
    legend = json.loads(meta.get("tilepack:legend", "[]"))
    distinct = sorted(set(int(v) for v in np.unique(src[~np.isnan(src)])))
    assert [e["value"] for e in legend] == distinct and all(len(e["rgba"]) == 4 and e["label"] for e in legend), \
        f"{len(legend)} entries, classes {distinct}"


@pytest.fixture(scope="module")
def classes_queries(classes, fixtures):
    path, meta, src = classes
    z = int(meta["maxzoom"])
    info = json.loads(run(["gdalinfo", "-json", fixtures["classes"]]).stdout)
    gt = info["geoTransform"]
    rng = random.Random(25)
    h, w = src.shape
    points, exact, tried = 0, 0, 0
    mismatches = []
    lat = lon = None
    while points < 40 and tried < 5000:
        tried += 1
        c, r = rng.randrange(2, w - 2), rng.randrange(2, h - 2)
        # Inside a class area (3×3 alike), so the tile's nearest sampling cannot pick a neighbour.
        if len(set(src[r - 1:r + 2, c - 1:c + 2].ravel().tolist())) != 1:
            continue
        x, y = gt[0] + (c + 0.5) * gt[1], gt[3] + (r + 0.5) * gt[5]
        lon, lat = mercator_to_lonlat(x, y)
        ref = run(["gdallocationinfo", "-valonly", "-wgs84", fixtures["classes"], repr(lon), repr(lat)]).stdout.strip()
        q = tilepack(["query", repr(lat), repr(lon), str(z), "--archive", path, "--json"], check=False)
        ans = json.loads(q.stdout.splitlines()[0]) if q.stdout.strip() else {}
        points += 1
        if ans.get("value") == float(ref) and ans.get("value_kind") == "class" and ans.get("elevation_m") is None:
            exact += 1
        elif len(mismatches) < 3:
            mismatches.append((lat, lon, ref, ans.get("value"), ans.get("value_kind")))
    return points, exact, mismatches, lat, lon, z


def test_classes_query_answers_the_class_exactly(classes_queries):
    """classes: query answers the class exactly at the points (gdallocationinfo)"""
    points, exact, mismatches, *_ = classes_queries
    assert points >= 20 and exact == points, f"{exact}/{points} exact; {mismatches}"


def test_classes_query_text_says_class(classes, classes_queries):
    path = classes[0]
    *_, lat, lon, z = classes_queries
    text = tilepack(["query", repr(lat), repr(lon), str(z), "--archive", path]).stdout
    assert "class:" in text and "elevation:" not in text, text.splitlines()[-1]


# Depth is drawn with the bathymetric ramp: every opaque pixel of the max-zoom tiles is one of
# the sea's blues (blue above red, at least green: the brightest shallows clip to 255 in both
# when lit), never a land green or brown.

@pytest.mark.parametrize("name", ["depth", "depth-pos"])
def test_depth_drawn_with_the_bathymetric_ramp(results, name):
    _, tiles = max_zoom_tiles(built(results, name)[0])
    px = np.concatenate([t.reshape(-1, 4) for t in tiles.values()]) if tiles else np.zeros((0, 4), np.uint8)
    px = px[px[:, 3] > 0].astype(int)
    blue = (px[:, 2] > px[:, 0]) & (px[:, 2] >= px[:, 1])
    assert len(px) > 0 and blue.all(), \
        f"{int(blue.sum())} of {len(px)} opaque pixels blue; mean RGB {px[:, :3].mean(axis=0).round(1).tolist() if len(px) else None}"


@pytest.fixture(scope="module")
def percent_point(results, fixtures):
    path = built(results, "percent")[0]
    meta = archive_metadata(path)
    z = int(meta["maxzoom"])
    b = json.loads(meta.get("bounds", "0,0,0,0").join("[]"))
    lon, lat = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return path, z, lat, lon


def test_percent_query_value_near_gdallocationinfo(percent_point, fixtures):
    """percent: query value (bilinear) near gdallocationinfo, value_kind percent, elevation_m null"""
    path, z, lat, lon = percent_point
    ref = float(run(["gdallocationinfo", "-valonly", "-wgs84", fixtures["percent"], repr(lon), repr(lat)]).stdout)
    ans = json.loads(tilepack(["query", repr(lat), repr(lon), str(z), "--archive", path, "--json"]).stdout)
    assert ans.get("value_kind") == "percent" and ans.get("elevation_m") is None \
        and ans.get("value") is not None and abs(ans["value"] - ref) < 2.0, f"{ans.get('value')} vs {ref}"


def test_percent_query_text_says_value_percent(percent_point):
    path, z, lat, lon = percent_point
    text = tilepack(["query", repr(lat), repr(lon), str(z), "--archive", path]).stdout
    assert any(l.startswith("value:") and " % " in l for l in text.splitlines()), text.splitlines()[-1]


def test_depth_pos_query_answers_negative_metres(results, fixtures):
    """depth-pos: query answers negative metres (elevation_m = value = −depth)"""
    path = built(results, "depth-pos")[0]
    meta = archive_metadata(path)
    b = json.loads(meta.get("bounds").join("[]"))
    lon, lat = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    ref = float(run(["gdallocationinfo", "-valonly", "-wgs84", fixtures["depth-pos"], repr(lon), repr(lat)]).stdout)
    ans = json.loads(tilepack(["query", repr(lat), repr(lon), meta["maxzoom"], "--archive", path, "--json"]).stdout)
    assert ans.get("value_kind") == "depth" and ans.get("elevation_m") is not None \
        and abs(ans["elevation_m"] + ref) < 25 and ans["elevation_m"] < 0, f"{ans.get('elevation_m')} vs depth {ref}"


# Natural colour: the stack through --bands 3,2,1, its named bands and the VRT draw RGB.byte.tif's tiles.

@pytest.fixture(scope="module")
def rgb_tiles(results):
    return max_zoom_tiles(built(results, "rgb")[0])


@pytest.mark.parametrize("name, label", [("s321", "--bands 3,2,1"), ("stack6", "named bands (DESCRIPTION)"),
                                         ("stack6-bgr.vrt", "gdal_translate -of VRT -b 3 -b 2 -b 1")])
def test_natural_colour_max_zoom_tiles_identical_to_rgb_byte_tifs(results, rgb_tiles, name, label):
    """natural colour via {label}: the max-zoom tiles identical to RGB.byte.tif's"""
    zr, ref_tiles = rgb_tiles
    z, tiles = max_zoom_tiles(built(results, name)[0])
    same = z == zr and tiles.keys() == ref_tiles.keys()
    diff = max((int(np.abs(tiles[k].astype(int) - ref_tiles[k].astype(int)).max()) for k in tiles), default=999) if same else 999
    assert same and diff == 0, f"{len(tiles)} max-zoom tiles: max difference {diff}"


def test_stack_without_names_draws_bands_1_2_3_and_suggests_bands_3_2_1(results, rgb_tiles):
    path, summary = built(results, "stack6-plain")
    _, ref_tiles = rgb_tiles
    _, tiles = max_zoom_tiles(path)
    common = [k for k in tiles if k in ref_tiles]
    swapped = all(np.array_equal(tiles[k][..., 0], ref_tiles[k][..., 2]) for k in common)
    assert swapped and "--bands 3,2,1" in summary, summary.splitlines()[2:3]


def test_bands_3_2_1_tile_correlates_with_gdalwarps_rgb(results, d):
    """--bands 3,2,1 tile: R,G,B correlate with gdalwarp's R,G,B (> 0.95)"""
    z, tiles = max_zoom_tiles(built(results, "s321")[0])
    k = max(tiles, key=lambda t: int((tiles[t][..., 3] == 255).sum()))
    w_, s_, e_, n_ = tile_bounds_3857(*k)
    warped = os.path.join(d, "warp.tif")
    run(["gdalwarp", "-q", "-overwrite", "-t_srs", "EPSG:3857", "-r", "bilinear", "-te", repr(w_), repr(s_), repr(e_), repr(n_),
         "-ts", "256", "256", rgb_path(), warped])
    ref = read_raster(warped)
    ok = tiles[k][..., 3] == 255
    ok &= ~np.isnan(ref).any(axis=0)
    corr = [float(np.corrcoef(tiles[k][..., c][ok], ref[c][ok])[0, 1]) for c in range(3)]
    assert min(corr) > 0.95, f"tile {k}: " + ", ".join(f"{c:.3f}" for c in corr)


# Bad input: a band the file lacks.

def test_bands_3_2_7_on_6_bands_one_line_usage_error(fixtures, d):
    """--bands 3,2,7 on 6 bands: one-line usage error naming --bands and the band count"""
    p = tilepack(["build", fixtures["stack6-plain"], "-o", os.path.join(d, "bad.mbtiles"), "--bands", "3,2,7", "--quiet"], check=False)
    err = p.stderr.strip()
    assert p.returncode != 0 and len(err.splitlines()) == 1 and "--bands" in err and "6 bands" in err \
        and not os.path.exists(os.path.join(d, "bad.mbtiles")), f"exit {p.returncode}: {err}"


def test_bands_3_x_usage_error(fixtures):
    p = tilepack(["build", fixtures["stack6-plain"], "--bands", "3,x", "--quiet"], check=False)
    assert p.returncode != 0 and "--bands" in p.stderr, p.stderr.strip()[:200]
