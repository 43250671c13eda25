"""PMTiles v3 against the spec's and the reference implementations' fixtures and against Python
`pmtiles` (3.8.1, checks/requirements.txt): (a) every valid fixture of ../shared/testdata/pmtiles
converts to MBTiles and back with the same bytes for every (z, x, y); (b) SampleRegions'
montblanc-color (PNG) and montblanc-dem (default codec, with elevation) built to MBTiles, converted
to PMTiles and back, equal the MBTiles tile for tile, and `build --format pmtiles` equals
`build` + `convert`; (c) Python `pmtiles` reads every tile of what tilepack writes, its header
says clustered, gzip'd directories, the zooms and bounds of the MBTiles, and the Terrarium
sibling decodes to the archive's elevation within Terrarium's 1/256 m.

    python3 -m pytest checks/test_pmtiles_check.py   (BIN=path/to/tilepack; default the debug build)
"""
import glob
import os
import sqlite3

import pytest

from checks.lib.common import require, run

VALID = ["pmtiles-repo__stamen_toner_raster_CC-BY_ODbL_z3.pmtiles", "pmtiles-repo__usgs-mt-whitney-8-15-webp-512.pmtiles",
         "pmtiles-repo__test_fixture_1.pmtiles", "pmtiles-repo__test_fixture_2.pmtiles",
         "go-pmtiles__test_fixture_1.pmtiles", "go-pmtiles__unclustered.pmtiles"]
INVALID = ["pmtiles-repo__invalid.pmtiles", "pmtiles-repo__invalid_v4.pmtiles", "pmtiles-repo__empty.pmtiles"]


def mbtiles_tiles(path):
    """{(z, x, y): bytes} of an MBTiles archive, y in XYZ."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return {(z, x, (1 << z) - 1 - row): bytes(data)
                for z, x, row, data in db.execute("SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles")}


def pmtiles_tiles(path):
    """{(z, x, y): bytes} of a PMTiles archive read by Python `pmtiles`, and its header."""
    from pmtiles.reader import MmapSource, Reader, all_tiles
    with open(path, "rb") as f:
        reader = Reader(MmapSource(f))
        return {tuple(zxy): bytes(data) for zxy, data in all_tiles(reader.get_bytes)}, reader.header(), reader.metadata()


def raw_pmtiles_tiles(tilepack, path, work):
    """{(z, x, y): bytes} of a PMTiles archive through tilepack's own conversion to MBTiles."""
    out = os.path.join(work, os.path.basename(path) + ".mbtiles")
    run([tilepack, "convert", path, out, "--force"])
    return mbtiles_tiles(out), out


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    require("pmtiles", "numpy", "PIL")
    return str(tmp_path_factory.mktemp("pmtiles-check"))


@pytest.mark.parametrize("name", VALID)
def test_fixture_converts_to_mbtiles_and_back_byte_identical(tilepack, testdata, work, name):
    src = os.path.join(testdata, "pmtiles", name)
    tiles, mb = raw_pmtiles_tiles(tilepack, src, work)
    assert tiles
    back = os.path.join(work, "back-" + name)
    run([tilepack, "convert", mb, back, "--force"])
    again, header, _ = pmtiles_tiles(back)
    assert again == tiles
    assert header["clustered"]
    if name != "go-pmtiles__unclustered.pmtiles":  # Python `pmtiles` reads only gzip'd directories
        original, _, _ = pmtiles_tiles(src)
        assert original == tiles


@pytest.mark.parametrize("name", INVALID)
def test_invalid_fixture_is_refused_in_one_line(tilepack, testdata, work, name):
    p = run([tilepack, "convert", os.path.join(testdata, "pmtiles", name), os.path.join(work, name + ".mbtiles")],
            check=False)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr


@pytest.fixture(scope="module")
def built(tilepack, sample_regions, work):
    """montblanc-color (PNG) and montblanc-dem (default codec, elevation) as MBTiles."""
    out = {}
    for name, extra in [("montblanc-color", ["--codec", "png"]), ("montblanc-dem", [])]:
        mb = os.path.join(work, name + ".mbtiles")
        run([tilepack, "build", os.path.join(sample_regions, name + ".tif"), "-o", mb, "--max-zoom", "11",
             "--progress", "none", *extra])
        out[name] = mb
    return out


@pytest.mark.parametrize("name", ["montblanc-color", "montblanc-dem"])
def test_sample_region_round_trips_and_python_pmtiles_reads_it(tilepack, built, work, name):
    mb = built[name]
    pm = os.path.join(work, name + ".pmtiles")
    run([tilepack, "convert", mb, pm, "--force"])
    tiles = mbtiles_tiles(mb)
    read, header, meta = pmtiles_tiles(pm)
    assert read == tiles
    with sqlite3.connect(mb) as db:
        rows = dict(db.execute("SELECT name, value FROM metadata"))
    assert header["clustered"] and header["internal_compression"].name == "GZIP"
    assert header["tile_compression"].name == "NONE"
    assert header["tile_type"].name == ("PNG" if rows["format"] == "png" else "UNKNOWN")
    assert (header["min_zoom"], header["max_zoom"]) == (int(rows["minzoom"]), int(rows["maxzoom"]))
    w, s, e, n = map(float, rows["bounds"].split(","))
    assert abs(header["min_lon_e7"] / 1e7 - w) < 1e-6 and abs(header["max_lat_e7"] / 1e7 - n) < 1e-6
    assert header["root_offset"] + header["root_length"] <= 16384
    assert header["addressed_tiles_count"] == len(tiles)
    assert meta["name"] == rows["name"]
    back = os.path.join(work, name + ".back.mbtiles")
    run([tilepack, "convert", pm, back, "--force"])
    assert mbtiles_tiles(back) == tiles
    # verify decodes every tile (and the terrain sibling's); a damaged tile is named, exit 2.
    p = run([tilepack, "verify", pm])
    assert f"{len(tiles)} tiles" in p.stdout, p.stdout
    bad = os.path.join(work, name + ".damaged.pmtiles")
    data = bytearray(open(pm, "rb").read())
    data[-600:] = bytes(600)  # the last tiles' bytes (tile data follows the directories)
    with open(bad, "wb") as f:
        f.write(data)
    p = run([tilepack, "verify", bad], check=False)
    assert p.returncode == 2 and "does not decode" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_terrain_sibling_is_terrarium_within_a_256th_of_a_metre(tilepack, built, work):
    import numpy as np

    from checks.lib.terrain import archive_elevation, png_rgba
    mb = built["montblanc-dem"]
    pm = os.path.join(work, "dem-terrain.pmtiles")
    run([tilepack, "convert", mb, pm, "--force"])
    terrain, header, meta = pmtiles_tiles(os.path.join(work, "dem-terrain.terrain.pmtiles"))
    assert meta["encoding"] == "terrarium" and header["tile_type"].name == "PNG"
    reference = archive_elevation(mb)
    assert reference and set(terrain) == set(reference)
    for key, png in terrain.items():
        rgba = np.asarray(png_rgba(png), dtype=np.float64)
        metres = rgba[..., 0] * 256 + rgba[..., 1] + rgba[..., 2] / 256 - 32768
        grid = np.asarray(reference[key][1], dtype=np.float64)
        assert grid.shape == metres.shape, key
        known = np.isfinite(grid)
        assert np.array_equal(known, rgba[..., 3] > 0), key
        # Terrarium keeps 1/256 m: encoding floors to the step below.
        assert np.all(np.abs(metres[known] - grid[known]) <= 1 / 256 + 1e-3), key
    # And back: the elevation table of PMTiles -> MBTiles is the Terrarium grid.
    back = os.path.join(work, "dem-terrain.back.mbtiles")
    run([tilepack, "convert", pm, back, "--force"])
    again = archive_elevation(back)
    assert set(again) == set(reference)


def test_build_format_pmtiles_equals_build_then_convert(tilepack, sample_regions, built, work):
    pm = os.path.join(work, "direct.pmtiles")
    run([tilepack, "build", os.path.join(sample_regions, "montblanc-color.tif"), "-o", pm, "--max-zoom", "11",
         "--progress", "none", "--codec", "png"])
    assert not glob.glob(pm + ".mbtiles*")
    direct, _, _ = pmtiles_tiles(pm)
    assert direct == mbtiles_tiles(built["montblanc-color"])


def test_python_pmtiles_reads_every_tile_over_http_ranges_from_serve(tilepack, built, work):
    """(d) A Python `pmtiles` reader whose source is HTTP Range requests to `tilepack serve`."""
    import urllib.request

    from pmtiles.reader import Reader, all_tiles

    from checks.lib.common import Serve
    lib = os.path.join(work, "served")
    os.makedirs(lib, exist_ok=True)
    run([tilepack, "convert", built["montblanc-dem"], os.path.join(lib, "dem.pmtiles"), "--force"])
    expected = mbtiles_tiles(built["montblanc-dem"])
    with Serve(["--library", lib], binary=tilepack, limit=120) as server:
        ranges = []

        def get_bytes(offset, length):
            req = urllib.request.Request(server.base + "/dem.pmtiles",
                                         headers={"Range": f"bytes={offset}-{offset + length - 1}"})
            with urllib.request.urlopen(req, timeout=30) as r:
                assert r.status == 206, r.status
                assert r.headers["Content-Range"].startswith(f"bytes {offset}-")
                ranges.append(length)
                return r.read()

        reader = Reader(get_bytes)
        got = {tuple(zxy): bytes(data) for zxy, data in all_tiles(reader.get_bytes)}
        assert got == expected
        assert reader.metadata()["name"]
        assert max(ranges) < os.path.getsize(os.path.join(lib, "dem.pmtiles"))  # never the whole file
        # The terrain sibling is served too; a range past the end is 416.
        req = urllib.request.Request(server.base + "/dem.terrain.pmtiles", headers={"Range": "bytes=0-126"})
        with urllib.request.urlopen(req, timeout=30) as r:
            assert r.status == 206 and r.read()[:7] == b"PMTiles"
        size = os.path.getsize(os.path.join(lib, "dem.pmtiles"))
        req = urllib.request.Request(server.base + "/dem.pmtiles", headers={"Range": f"bytes={size}-"})
        try:
            urllib.request.urlopen(req, timeout=30)
            raise AssertionError("a range past the end was answered")
        except urllib.error.HTTPError as e:
            assert e.code == 416 and e.headers["Content-Range"] == f"bytes */{size}"
