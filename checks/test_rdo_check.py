"""Rate-distortion-optimised ASTC on real tiles, quickly: rasterio's RGB.byte (Landsat) built at
zooms 7-8 with the default (`--rdo` at its default λ) and with `--rdo 0` (the best-error blocks)
must store fewer tile bytes (at least 10 % fewer; the full sweep, checks/bench/bench-rdo, measures
~25 %) at a mean tile PSNR, against the `--codec png` build, no more than 0.5 dB lower; the
archive records the λ in its build options (`tilepack info --json`). Tiles are compared with
Python's zlib/PIL reading our `convert --to png` output, over the pixels the PNG build does not
leave transparent.

Usage: python3 -m pytest checks/test_rdo_check.py  (BIN=path/to/tilepack to test another build)
"""
import io
import json
import os
import sqlite3

import pytest

from checks.lib import common

ZOOMS = ["--min-zoom", "7", "--max-zoom", "8"]


def tiles(path):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return {(z, x, y): bytes(d) for z, x, y, d in
                db.execute("SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles")}


def mean_psnr(reference, decoded):
    common.require("numpy", "PIL")
    import numpy as np
    from PIL import Image
    ref, got = tiles(reference), tiles(decoded)
    assert ref.keys() == got.keys()
    values = []
    for key in sorted(ref):
        a = np.asarray(Image.open(io.BytesIO(ref[key])).convert("RGBA"))
        b = np.asarray(Image.open(io.BytesIO(got[key])).convert("RGBA"))
        mask = a[..., 3] > 0
        if mask.any():
            values.append(min(60.0, common.psnr(a[..., :3], b[..., :3], mask=mask)))
    return sum(values) / len(values)


@pytest.fixture(scope="module")
def builds(tilepack, testdata, tmp_path_factory):
    d = tmp_path_factory.mktemp("rdo")
    src = os.path.join(testdata, "geotiff", "rasterio__RGB.byte.tif")
    out = {}
    for name, extra in (("png", ["--codec", "png"]), ("off", ["--rdo", "0"]), ("default", [])):
        out[name] = str(d / f"{name}.mbtiles")
        common.run([tilepack, "build", src, "-o", out[name], "--quiet", *ZOOMS, *extra], timeout=300)
    for name in ("off", "default"):
        common.run([tilepack, "convert", out[name], str(d / f"{name}-png.mbtiles"), "--to", "png"], timeout=300)
    return d, out


def stored_bytes(path):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute("SELECT sum(length(tile_data)) FROM tiles").fetchone()[0]


def test_default_is_smaller_at_nearly_the_same_psnr(builds):
    d, out = builds
    off, default = stored_bytes(out["off"]), stored_bytes(out["default"])
    assert default < 0.9 * off, f"{off} -> {default} bytes"
    p_off = mean_psnr(out["png"], str(d / "off-png.mbtiles"))
    p_default = mean_psnr(out["png"], str(d / "default-png.mbtiles"))
    assert p_default >= p_off - 0.5, f"{p_off:.2f} -> {p_default:.2f} dB"


def test_the_lambda_is_recorded(tilepack, builds):
    _, out = builds
    options = {name: json.loads(common.run([tilepack, "info", out[name], "--json"]).stdout)["build_options"]
               for name in out}
    assert options["off"]["rdo"] == "0" and "rdo" not in options["png"]
    assert float(options["default"]["rdo"]) > 0
