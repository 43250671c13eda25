"""`tilepack info ARCHIVE`, text and JSON, checked against the archive itself read with Python's
sqlite3 (not our reader): tiles and bytes per zoom, elevation rows, zooms and bytes, the source's
SHA-256 against the file, the recorded build options, name, centre and bounds; a damaged or
missing archive is one line on stderr naming the file, exit 2.

Usage: python3 -m pytest checks/test_info_check.py  (BIN=path/to/tilepack to test another build)
"""
import hashlib
import json
import os
import sqlite3

import pytest

from checks.lib import common


@pytest.fixture(scope="module")
def dem(tilepack, sample_regions, tmp_path_factory):
    out = tmp_path_factory.mktemp("info") / "montblanc-dem.mbtiles"
    src = os.path.join(sample_regions, "montblanc-dem.tif")
    common.run([tilepack, "build", src, "-o", out, "--codec", "png"], timeout=300)
    return src, str(out)


def sql(path, query):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute(query).fetchall()


def test_json_matches_the_file(tilepack, dem):
    src, path = dem
    info = json.loads(common.run([tilepack, "info", path, "--json"]).stdout)
    assert info["kind"] == "archive" and info["container"] == "mbtiles"
    meta = dict(sql(path, "SELECT name, value FROM metadata"))
    assert info["name"] == meta["name"] == "montblanc-dem"
    assert info["format"] == meta["format"] and info["codec"] == "png" and info["tile_size"] == 256
    per_zoom = [
        {"z": z, "tiles": n, "bytes": b}
        for z, n, b in sql(path, "SELECT zoom_level, count(*), sum(length(tile_data)) FROM tiles GROUP BY 1 ORDER BY 1")
    ]
    assert info["tiles"]["per_zoom"] == per_zoom
    assert info["tiles"]["count"] == sum(r["tiles"] for r in per_zoom)
    assert info["tiles"]["bytes"] == sum(r["bytes"] for r in per_zoom)
    assert (info["minzoom"], info["maxzoom"]) == (per_zoom[0]["z"], per_zoom[-1]["z"])
    [(rows, lo, hi, size)] = sql(path, "SELECT count(*), min(zoom_level), max(zoom_level), sum(length(data)) FROM elevation")
    elevation = info["elevation"]
    assert (elevation["rows"], elevation["minzoom"], elevation["maxzoom"], elevation["bytes"]) == (rows, lo, hi, size)
    assert elevation["encoding"] == meta["tilepack:elevation_encoding"] and elevation["value_kind"] == "elevation"
    with open(src, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    assert info["sources"] == [{"file": "montblanc-dem.tif", "sha256": digest}]
    assert info["build_options"] == json.loads(meta["tilepack:build_options"])
    assert info["build_options"]["codec"] == "png"
    assert info["bounds"] == [float(v) for v in meta["bounds"].split(",")]
    lon, lat, zoom = (float(v) for v in meta["center"].split(","))
    assert info["center"] == [lon, lat, zoom]


def test_text_says_the_same(tilepack, dem):
    _, path = dem
    info = json.loads(common.run([tilepack, "info", path, "--json"]).stdout)
    text = common.run([tilepack, "info", path]).stdout.splitlines()
    assert text[0] == f"{path}: archive, mbtiles, format png, codec png, 256 px tiles"
    assert f"name {info['name']}" in text
    assert f"zooms {info['minzoom']}–{info['maxzoom']}" in text
    for row in info["tiles"]["per_zoom"]:
        assert any(line.startswith(f"  z{row['z']}: {row['tiles']} tiles, ") for line in text), row
    e = info["elevation"]
    assert any(line.startswith(f"elevation {e['rows']} rows at z{e['minzoom']}–{e['maxzoom']}, ") for line in text)
    source = info["sources"][0]
    assert f"source {source['file']} sha256 {source['sha256']}" in text


@pytest.mark.parametrize("make", ["garbage", "truncated", "missing"])
def test_a_damaged_or_missing_archive_is_named(tilepack, dem, tmp_path, make):
    _, good = dem
    path = tmp_path / "bad.mbtiles"
    if make == "garbage":
        path.write_bytes(b"not an archive at all" * 10)
    elif make == "truncated":
        with open(good, "rb") as f:
            path.write_bytes(f.read()[:4096])
    p = common.run([tilepack, "info", path], check=False)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0], p.stderr


def test_pmtiles_json_and_text_match_the_file(tilepack, dem, tmp_path):
    """`info` of a PMTiles archive against Python `pmtiles` reading the same file: the header's
    layout, tiles and bytes per zoom, and the terrain sibling's rows."""
    common.require("pmtiles")
    from pmtiles.reader import MmapSource, Reader, all_tiles

    _, mbtiles = dem
    path = tmp_path / "montblanc-dem.pmtiles"
    common.run([tilepack, "convert", mbtiles, path])
    info = json.loads(common.run([tilepack, "info", path, "--json"]).stdout)
    mb = json.loads(common.run([tilepack, "info", mbtiles, "--json"]).stdout)
    with open(path, "rb") as f:
        reader = Reader(MmapSource(f))
        header = reader.header()
        per_zoom = {}
        for (z, _, _), data in all_tiles(reader.get_bytes):
            n, b = per_zoom.get(z, (0, 0))
            per_zoom[z] = (n + 1, b + len(data))
    assert info["container"] == "pmtiles" and info["kind"] == "archive"
    assert info["tiles"]["per_zoom"] == [{"z": z, "tiles": n, "bytes": b} for z, (n, b) in sorted(per_zoom.items())]
    assert info["tiles"] == mb["tiles"]  # the same tiles as the MBTiles it came from
    p = info["pmtiles"]
    assert p["clustered"] == bool(header["clustered"]) is True
    assert (p["addressed_tiles"], p["tile_entries"], p["tile_contents"]) == (
        header["addressed_tiles_count"], header["tile_entries_count"], header["tile_contents_count"])
    assert p["terrain"].endswith("montblanc-dem.terrain.pmtiles")
    for key in ("name", "codec", "tile_size", "minzoom", "maxzoom", "sources", "build_options"):
        assert info[key] == mb[key], key
    assert info["elevation"]["encoding"] == "terrarium"
    assert info["elevation"]["rows"] == mb["elevation"]["rows"]
    text = common.run([tilepack, "info", path]).stdout.splitlines()
    assert text[0].startswith(f"{path}: archive, pmtiles, format ")
    assert any(line.startswith("pmtiles: clustered, directories gzip, tiles none") for line in text), text
