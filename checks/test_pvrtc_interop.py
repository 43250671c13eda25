"""Cross-checks tilepack's PVRTC1 decoder against two independent decoders from PyPI.

For synthetic images (gradients, noise, flat colours, alpha edges), 256x256 crops of
../shared/testdata imagery when that folder exists, and random words, in 4bpp and 2bpp: encodes
with `tilepack codec encode` (fast and quality), decodes with `tilepack codec decode`, and
requires byte-for-byte equality with texture2ddecoder (BGRA, swapped here) and tex2img. One test
per image, format and level (and per random size and trial), each against both decoders.
Needs texture2ddecoder, tex2img, numpy and tifffile (the peers of checks/requirements.txt).

    python3 -m pytest checks/test_pvrtc_interop.py   (BIN=path/to/tilepack; default the debug build)
"""
import os
import subprocess

import pytest

from checks.lib.common import TESTDATA, require

BIN = TMP = None  # set by the fixture
rng = None
# The synthetic images' widths (PVRTC 2bpp needs 16 or more) and the imagery crops (256 wide).
WIDTHS = {"gradient64": 64, "noise32x64": 32, "flat16x8": 16, "alpha_disc128": 128, "alpha_ramp128": 128,
          "wide256x32": 256, "tall16x128": 16}
CROPS = ["rasterio__RGB.byte.tif", "rio-tiler__web.tif", "rasterio__shade.tif"]
SIZES = [(8, 8), (16, 8), (16, 16), (32, 16), (64, 16), (16, 64), (128, 128), (256, 32), (32, 256), (1024, 1024)]


def encoded_cases():
    names = dict(WIDTHS)
    for name in CROPS:  # a crop when the file is there (and at least 256×256)
        if os.path.exists(os.path.join(TESTDATA, "geotiff", name)):
            names["crop_" + name.split(".")[0]] = 256
    return [(name, fmt, level) for name, w in names.items() for fmt in ("pvrtc4", "pvrtc2") if not (fmt == "pvrtc2" and w < 16)
            for level in ("fast", "quality")]


def random_cases():
    return [(fmt, w, h, trial) for fmt in ("pvrtc4", "pvrtc2") for (w, h) in SIZES if not (fmt == "pvrtc2" and w < 16)
            for trial in range(3 if w * h < 65536 else 1)]


def rgba(rgb, alpha=None):
    h, w = rgb.shape[:2]
    a = np.full((h, w), 255, np.uint8) if alpha is None else alpha.astype(np.uint8)
    return np.dstack([rgb.astype(np.uint8), a])

def synthetic():
    images = {}
    y, x = np.mgrid[0:64, 0:64]
    images["gradient64"] = rgba(np.dstack([x * 4, y * 4, (x + y) * 2]))
    images["noise32x64"] = rgba(rng.integers(0, 256, (64, 32, 3)))
    images["flat16x8"] = rgba(np.full((8, 16, 3), (200, 90, 30)))
    y, x = np.mgrid[0:128, 0:128]
    alpha = np.where((x - 64) ** 2 + (y - 64) ** 2 < 40 ** 2, 255, 0)
    images["alpha_disc128"] = rgba(np.dstack([x * 2, 255 - y * 2, np.full_like(x, 128)]), alpha)
    soft = np.clip((x - 32) * 4, 0, 255)
    images["alpha_ramp128"] = rgba(np.dstack([y * 2, x, 255 - x]), soft)
    images["wide256x32"] = rgba(np.dstack([np.mgrid[0:32, 0:256][1], rng.integers(0, 256, (32, 256)), np.full((32, 256), 40)]))
    images["tall16x128"] = rgba(rng.integers(0, 256, (128, 16, 3)))
    shared = os.path.join(TESTDATA, "geotiff")
    for name in ["rasterio__RGB.byte.tif", "rio-tiler__web.tif", "rasterio__shade.tif"]:
        path = os.path.join(shared, name)
        if not os.path.exists(path):
            continue
        a = tifffile.imread(path)
        if a.ndim == 3 and a.shape[0] in (3, 4) and a.shape[-1] not in (3, 4):
            a = np.moveaxis(a, 0, -1)
        if a.ndim == 2:
            a = np.dstack([a, a, a])
        a = a[..., :3]
        if a.dtype != np.uint8:
            a = (a.astype(np.float64) * 255 / max(a.max(), 1)).astype(np.uint8)
        h, w = a.shape[:2]
        if h >= 256 and w >= 256:
            y0, x0 = (h - 256) // 2, (w - 256) // 2
            images["crop_" + name.split(".")[0]] = rgba(a[y0:y0 + 256, x0:x0 + 256])
    return images

def run(*args):
    r = subprocess.run([BIN, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(" ".join(args) + ": " + r.stderr.strip())


def ours(words, fmt, w, h):
    src, dst = os.path.join(TMP, "w.pvr"), os.path.join(TMP, "d.rgba")
    open(src, "wb").write(words)
    run("codec", "decode", src, "--format", fmt, "--size", f"{w}x{h}", "-o", dst)
    return open(dst, "rb").read()


def references(words, fmt, w, h):
    is2 = fmt == "pvrtc2"
    bgra = np.frombuffer(texture2ddecoder.decode_pvrtc(words, w, h, is2), np.uint8).reshape(-1, 4)
    t2d = bgra[:, [2, 1, 0, 3]].tobytes()
    # tex2img 0.x reads a 4bpp-sized input even in 2bpp mode: without padding its 2bpp
    # output depends on whatever memory follows the buffer (measured: differs run to run).
    padded = words + bytes(len(words)) if is2 else words
    t2i = bytes(tex2img.decompress_pvrtc(padded, w, h, 1 if is2 else 0))
    return t2d, t2i

def compare(words, fmt, w, h):
    """The mismatches of our decode against both references (empty when byte for byte equal)."""
    import numpy as np
    mine = ours(words, fmt, w, h)
    t2d, t2i = references(words, fmt, w, h)
    bad = []
    for ref_name, ref in (("texture2ddecoder", t2d), ("tex2img", t2i)):
        if mine != ref:
            diff = np.flatnonzero(np.frombuffer(mine, np.uint8) != np.frombuffer(ref, np.uint8))
            bad.append(f"vs {ref_name}: {diff.size} bytes differ, first at byte {diff[0] if diff.size else '-'}")
    return bad


@pytest.fixture(scope="module")
def inputs(tilepack, tmp_path_factory):
    """The synthetic images and the random words, drawn in the script's order from one seed."""
    global BIN, TMP, rng, np, texture2ddecoder, tex2img, tifffile
    # A missing tool fails the check (as the script did), never skips it.
    require("texture2ddecoder", "tex2img", "numpy", "tifffile")
    import numpy as np
    import tex2img
    import texture2ddecoder
    import tifffile
    BIN, TMP = tilepack, str(tmp_path_factory.mktemp("pvrtc-interop"))
    rng = np.random.default_rng(7)
    images = synthetic()
    words = {}
    for fmt, w, h, trial in random_cases():
        size = (w // (4 if fmt == "pvrtc4" else 8)) * (h // 4) * 8
        words[fmt, w, h, trial] = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
    return images, words


@pytest.mark.parametrize("name, fmt, level", encoded_cases())
def test_encoded_image_decodes_like_texture2ddecoder_and_tex2img(inputs, name, fmt, level):
    images, _ = inputs
    img = images[name]
    h, w = img.shape[:2]
    src = os.path.join(TMP, f"{name}.rgba")
    img.tofile(src)
    out = os.path.join(TMP, f"{name}-{fmt}-{level}.pvr")
    run("codec", "encode", src, "--size", f"{w}x{h}", "--format", fmt, "--level", level, "-o", out)
    bad = compare(open(out, "rb").read(), fmt, w, h)
    assert not bad, f"{name} {fmt} {level}: " + "; ".join(bad)


@pytest.mark.parametrize("fmt, w, h, trial", random_cases())
def test_random_words_decode_like_texture2ddecoder_and_tex2img(inputs, fmt, w, h, trial):
    _, words = inputs
    bad = compare(words[fmt, w, h, trial], fmt, w, h)
    assert not bad, f"random {fmt} {w}x{h} #{trial}: " + "; ".join(bad)
