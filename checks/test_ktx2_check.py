"""Issue 29, Must-show 1: every GPU tile is a KTX 2.0 file that an independent reader takes.

Builds SampleRegions/montblanc-color.tif and montblanc-dem.tif with the default codec (ASTC
6x6) and montblanc-color.tif with --codec pvrtc4 (each --level fast and --max-zoom 12, so the
debug binary takes seconds; the container does not depend on the encoder's effort), then:

  - the archive's `format` is `image/ktx2`, `tilepack:codec` the codec, `tilepack:version` set;
  - every tile parses with checks/lib/ktx2.py (struct, written from the KTX 2.0 text, never
    tilepack's code): identifier, header, level index, DFD (Khronos basic block: ASTC or
    PVRTC colour model, block size, bytes, one sample), key/values (`KTXwriter` = `tilepack`),
    level alignment, zlib (scheme 3) inflating exactly;
  - the payload decoded by texture2ddecoder equals our own decode, read back from `tilepack
    convert --to png` of the same archive (lossless PNG of what the tile store decodes):
    PVRTC byte for byte (test_pvrtc_interop holds the decoders equal), ASTC within 1 per
    channel, i.e. PSNR >= 48.1 dB (texture2ddecoder rounds the 16 -> 8-bit step differently
    from the specification, which we and astcenc follow: test_astc_interop);
  - `gdal_translate` of the PNG archive exits 0 without `ERROR` and gives a picture that is
    not blank; GDAL 3.6 on the KTX2 archive itself is recorded (what docs/FORMAT.md says).

    python3 -m pytest checks/test_ktx2_check.py   (BIN=path/to/tilepack; default the debug build)
    KTX2_FULL=1 python3 -m pytest checks/test_ktx2_check.py   (the default builds: quality, every zoom)
"""
import io
import os
import sqlite3

import pytest

from checks.lib import ktx2
from checks.lib.common import SAMPLE_REGIONS, psnr, require, run

BUILDS = [  # (name, source, extra build arguments, codec)
    ("color", "montblanc-color.tif", [], "astc6x6"),
    ("dem", "montblanc-dem.tif", [], "astc6x6"),
    ("color-pvrtc4", "montblanc-color.tif", ["--codec", "pvrtc4"], "pvrtc4"),
]
MAX_ZOOM = "12"
# KTX2_FULL=1: the default builds themselves (quality, every zoom: what `tilepack build` makes;
# minutes with the debug binary, so CI runs the fast form).
BUILD_ARGS = [] if os.environ.get("KTX2_FULL") else ["--level", "fast", "--max-zoom", MAX_ZOOM]
ASTC_MIN_PSNR = 48.1  # a difference of at most 1 in every channel of every pixel


def tiles(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        meta = dict(con.execute("SELECT name, value FROM metadata"))
        rows = con.execute("SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles").fetchall()
    finally:
        con.close()
    return meta, {(z, x, y): bytes(d) for z, x, y, d in rows}


@pytest.fixture(scope="module")
def archives(tilepack, tmp_path_factory):
    require("texture2ddecoder", "numpy", "PIL")
    work = tmp_path_factory.mktemp("ktx2-check")
    out = {}
    for name, source, extra, codec in BUILDS:
        path = str(work / f"{name}.mbtiles")
        run([tilepack, "build", os.path.join(SAMPLE_REGIONS, source), "-o", path, "--quiet",
             *BUILD_ARGS, *extra])
        png = str(work / f"{name}-png.mbtiles")
        run([tilepack, "convert", path, png, "--to", "png", "--quiet"])
        out[name] = (path, png, codec)
    return out


@pytest.mark.parametrize("name", [b[0] for b in BUILDS])
def test_every_tile_is_ktx2_and_decodes_independently(archives, name):
    import numpy as np
    import texture2ddecoder
    from PIL import Image

    path, png, codec = archives[name]
    meta, stored = tiles(path)
    assert meta["format"] == "image/ktx2"
    assert meta["tilepack:codec"] == codec
    assert meta.get("tilepack:version")
    pmeta, pngs = tiles(png)
    assert pmeta["format"] == "png" and pmeta["tilepack:codec"] == "png"
    assert set(pngs) == set(stored)
    side = int(meta.get("tilepack:tile_size", "256"))
    schemes, worst = {0: 0, 3: 0}, float("inf")
    for key, blob in sorted(stored.items()):
        info = ktx2.parse(blob)
        problems = ktx2.check_tile(info, codec, side)
        assert not problems, f"{name} tile {key}: {problems}"
        schemes[info["supercompressionScheme"]] += 1
        data = info["levels"][0]["data"]
        if codec.startswith("pvrtc"):
            bgra = texture2ddecoder.decode_pvrtc(data, side, side, codec == "pvrtc2")
        else:
            bw, bh = ktx2.BLOCKS[codec]
            bgra = texture2ddecoder.decode_astc(data, side, side, bw, bh)
        theirs = np.frombuffer(bgra, np.uint8).reshape(side, side, 4)[..., [2, 1, 0, 3]]
        ours = np.asarray(Image.open(io.BytesIO(pngs[key])).convert("RGBA"))
        if codec.startswith("pvrtc"):
            assert np.array_equal(theirs, ours), f"{name} tile {key}: texture2ddecoder differs from ours"
        else:
            delta = int(np.abs(theirs.astype(int) - ours.astype(int)).max())
            assert delta <= 1, f"{name} tile {key}: texture2ddecoder differs from ours by {delta}"
            worst = min(worst, psnr(theirs, ours))
    assert sum(schemes.values()) == len(stored)
    print(f"{name}: {len(stored)} tiles, supercompression none {schemes[0]}, zlib {schemes[3]}; "
          f"worst PSNR vs texture2ddecoder {worst:.1f} dB")
    assert worst >= ASTC_MIN_PSNR


@pytest.mark.gdal
def test_gdal_reads_the_png_conversion(archives, tmp_path):
    import numpy as np
    from PIL import Image

    path, png, _ = archives["color"]
    picture = str(tmp_path / "color.png")
    r = run(["gdal_translate", "-of", "PNG", png, picture], check=False)
    assert r.returncode == 0 and "ERROR" not in r.stderr + r.stdout, r.stderr
    pixels = np.asarray(Image.open(picture).convert("RGBA"))
    opaque = pixels[..., 3] > 0
    assert opaque.mean() > 0.5, "gdal_translate's picture is mostly transparent"
    assert pixels[..., :3][opaque].std() > 10, "gdal_translate's picture is flat"
    # GDAL 3.6 on the KTX2 archive: MBTiles' driver ignores `format` and tries PNG/JPEG/WebP
    # on each tile; recorded here as docs/FORMAT.md states it.
    raw = run(["gdal_translate", "-of", "PNG", path, str(tmp_path / "ktx2.png")], check=False)
    print(f"gdal_translate on the KTX2 archive: exit {raw.returncode}; stderr: {raw.stderr.strip()[:300]}")
    assert "Cannot parse tile data" in raw.stderr or raw.returncode != 0
