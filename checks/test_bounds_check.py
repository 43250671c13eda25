"""Sizes from input are bounded before they are allocated (issue 27, Must show 1, first two
items), measured as the process's peak RSS (VmHWM from /proc/PID/status):

  build  1. a 542-byte GeoTIFF claiming 65,535 samples per pixel is refused with one line
            (`FILE: 65535 bands; tilepack reads at most 4096`, exit 2) at a few MiB;
         2. a 4,096-band file (at the cap) that cannot fit --memory 512MiB is refused by the
            memory plan, naming what it needs and the budget (exit 2), before reading pixels;
         3. a 64-band file that fits is built within --memory 512MiB (VmHWM ≤ 512 MiB).
  serve  4. `serve --budget 64MiB` over an archive whose elevation rows are 65 KB zlib
            streams of 64 MiB (declared 256² and 4096²), and one whose tile blobs are 100 MB,
            requested repeatedly from 4 threads: every bad tile refused (4xx/5xx), good tiles
            still served, VmHWM < 128 MiB.

Runs on the debug binary (BIN overrides); OLD_BIN=/path/to/an/older/tilepack measures it too
(informational: its figures are printed with -s, not checked; its 65,535-band build runs under
a 4 GiB address-space limit). Every process is under `timeout`.

    python3 -m pytest checks/test_bounds_check.py
"""
import os
import shutil
import sqlite3
import struct
import subprocess
import threading
import time
import zlib

import pytest

from checks.lib.common import MiB, Serve, http_get, hwm_kib, run_measured

OLD_BIN = os.environ.get("OLD_BIN")


# ---------------------------------------------------------------- GeoTIFF writer

def geotiff(path, width, height, bands, bits=8, fmt=1, tile=None, pad_to=None, spp=None, fill=None):
    """A little-endian classic GeoTIFF (EPSG:4326, 45.8–45.9 N, 6.8–6.9 E), pixel-interleaved,
    uncompressed, in strips of one row or in `tile`-pixel tiles. `spp` overrides
    SamplesPerPixel (a claim, with no data behind it); `pad_to` pads the file with a
    Software tag to exactly that many bytes."""
    bw = bits // 8
    if fill is None:
        def fill(x, y, b):
            return (x * 7 + y * 3 + b * 11) % 251
    # Blocks.
    blocks = []
    if tile:
        tw = th = tile
        for by in range(0, height, th):
            for bx in range(0, width, tw):
                row = bytearray()
                for y in range(by, by + th):
                    for x in range(bx, bx + tw):
                        for b in range(bands):
                            v = fill(x, y, b) if x < width and y < height else 0
                            row += struct.pack("<f", float(v)) if fmt == 3 else int(v).to_bytes(bw, "little")
                blocks.append(bytes(row))
    else:
        for y in range(height):
            row = bytearray()
            for x in range(width):
                for b in range(bands):
                    v = fill(x, y, b)
                    row += struct.pack("<f", float(v)) if fmt == 3 else int(v).to_bytes(bw, "little")
            blocks.append(bytes(row))
    spp = spp if spp is not None else bands
    scale = (0.1 / width, 0.1 / height, 0.0)
    tiepoint = (0.0, 0.0, 0.0, 6.8, 45.9, 0.0)
    keys = [1, 1, 0, 3, 1024, 0, 1, 2, 1025, 0, 1, 1, 2048, 0, 1, 4326]
    tags = {
        256: (4, [width]), 257: (4, [height]), 258: (3, [bits]), 259: (3, [1]), 262: (3, [1]),
        277: (3, [spp]), 284: (3, [1]), 339: (3, [fmt]),
        33550: (12, list(scale)), 33922: (12, list(tiepoint)), 34735: (3, keys),
    }
    if tile:
        tags[322] = (4, [tile]); tags[323] = (4, [tile])
        tags[325] = (4, [len(b) for b in blocks])
    else:
        tags[278] = (4, [1])
        tags[279] = (4, [len(b) for b in blocks])
    offsets_tag = 324 if tile else 273
    tags[offsets_tag] = (4, [0] * len(blocks))

    def layout(software):
        t = dict(tags)
        if software:
            t[305] = (2, software)
        n = len(t)
        ifd_size = 2 + 12 * n + 4
        pos = 8 + ifd_size
        extra = {}
        for tag in sorted(t):
            typ, vals = t[tag]
            size = {2: 1, 3: 2, 4: 4, 12: 8}[typ] * len(vals)
            if size > 4:
                extra[tag] = pos
                pos += size + (size & 1)
        return t, extra, pos

    def encode(software):
        t, extra, data_at = layout(software)
        offs, at = [], data_at
        for b in blocks:
            offs.append(at)
            at += len(b)
        t[offsets_tag] = (4, offs)
        t, extra, data_at = layout(software)  # same sizes
        t[offsets_tag] = (4, offs)
        out = bytearray(b"II*\x00" + struct.pack("<I", 8))
        out += struct.pack("<H", len(t))
        tail = bytearray()
        for tag in sorted(t):
            typ, vals = t[tag]
            fmtc = {2: "B", 3: "H", 4: "I", 12: "d"}[typ]
            raw = bytes(vals) if typ == 2 else struct.pack("<%d%s" % (len(vals), fmtc), *vals)
            out += struct.pack("<HHI", tag, typ, len(vals))
            if len(raw) <= 4:
                out += raw + b"\x00" * (4 - len(raw))
            else:
                out += struct.pack("<I", extra[tag])
                tail += raw + (b"\x00" if len(raw) & 1 else b"")
        out += struct.pack("<I", 0)
        out += tail
        assert len(out) == data_at, (len(out), data_at)
        for b in blocks:
            out += b
        return bytes(out)

    data = encode(None)
    if pad_to is not None and len(data) < pad_to:
        # A Software tag adds 12 bytes of entry plus its text (inline up to 4 bytes).
        need = pad_to - len(data) - 12
        for n in range(need + 2, 4, -1):
            text = list((b"tilepack bounds-check " * 40)[: n - 1]) + [0]
            candidate = encode(text)
            if len(candidate) <= pad_to:
                # Word alignment may leave a byte over: trailing bytes are allowed.
                data = candidate + bytes(pad_to - len(candidate))
                break
    with open(path, "wb") as f:
        f.write(data)
    return len(data)


def build_archives(binary, work):
    """A DEM archive built by tilepack, then two hostile copies edited in SQL."""
    dem = os.path.join(work, "dem.tif")
    geotiff(dem, 128, 128, 1, bits=32, fmt=3, tile=None, fill=lambda x, y, b: 1000 + x + y)
    lib = os.path.join(work, "lib")
    os.makedirs(lib)
    good = os.path.join(lib, "good.mbtiles")
    r = subprocess.run(["timeout", "120", binary, "build", dem, "-o", good], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("building the DEM archive failed: " + r.stderr.strip())
    bomb = os.path.join(lib, "bomb.mbtiles")
    blob = os.path.join(lib, "blob.mbtiles")
    shutil.copy(good, bomb)
    shutil.copy(good, blob)
    stream = zlib.compress(bytes(64 * MiB), 9)
    db = sqlite3.connect(bomb)
    rows = db.execute("SELECT zoom_level, tile_column, tile_row FROM elevation ORDER BY zoom_level DESC").fetchall()
    # Half the rows declare the tile's own size, half 4096² (= the 64 MiB the stream holds).
    for i, (z, x, y) in enumerate(rows):
        side = 256 if i % 2 == 0 else 4096
        db.execute("UPDATE elevation SET encoding = 'f32le-deflate', width = ?, height = ?, data = ? "
                   "WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?", (side, side, stream, z, x, y))
    db.commit()
    db.close()
    db = sqlite3.connect(blob)
    tiles = db.execute("SELECT zoom_level, tile_column, tile_row, tile_id FROM map ORDER BY zoom_level DESC").fetchall()
    bad_ids = sorted({t[3] for t in tiles})[:3]
    for tid in bad_ids:
        db.execute("UPDATE images SET tile_data = zeroblob(100000000) WHERE tile_id = ?", (tid,))
    db.commit()
    db.close()
    bad_tiles = [(z, x, (1 << z) - 1 - y) for z, x, y, tid in tiles if tid in bad_ids]
    good_tiles = [(z, x, (1 << z) - 1 - y) for z, x, y, tid in tiles if tid not in bad_ids]
    elev_tiles = [(z, x, (1 << z) - 1 - y) for z, x, y in rows]
    return lib, elev_tiles, bad_tiles, good_tiles, len(stream)


def serve_case(binary, work, elev_tiles, bad_tiles, good_tiles, rounds=15):
    lib = os.path.join(work, "lib")
    env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(work, "config"), HOME=work)
    try:
        s = Serve(["--library", lib, "--budget", "64MiB", "--log-level", "error"], binary=binary, env=env,
                  limit=300, stdout=os.path.join(work, "serve.out"), stderr=os.path.join(work, "serve.err"))
    except RuntimeError:
        return None
    port, server = s.port, s.pid
    statuses = {"bomb": set(), "blob": set(), "good": set()}
    lock = threading.Lock()
    paths = ([("bomb", f"/terrain/bomb/{z}/{x}/{y}.png") for z, x, y in elev_tiles]
             + [("blob", f"/tiles/blob/{z}/{x}/{y}.png") for z, x, y in bad_tiles]
             + [("blob", f"/tiles/blob/{z}/{x}/{y}") for z, x, y in bad_tiles]
             + [("good", f"/tiles/good/{z}/{x}/{y}.png") for z, x, y in good_tiles[:4]])
    requests = 0

    def worker(k):
        nonlocal requests
        for r in range(rounds):
            for i, (kind, path) in enumerate(paths):
                if (i + r) % 4 != k:
                    continue
                try:
                    status, _, _ = http_get(port, path)
                except Exception as e:  # noqa: BLE001 - a dropped connection is a finding
                    status = f"error {type(e).__name__}"
                with lock:
                    statuses[kind].add(status)
                    requests += 1

    start = time.monotonic()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - start
    peak = hwm_kib(server) or 0
    alive = s.alive()
    s.stop()
    return {"peak": peak / 1024, "statuses": statuses, "alive": alive, "requests": requests, "seconds": seconds}


# ---------------------------------------------------------------- the checks

@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return str(tmp_path_factory.mktemp("bounds-check"))


# 1. The 542-byte claim of 65,535 bands.

@pytest.fixture(scope="module")
def claim(work):
    path = os.path.join(work, "claims-65535.tif")
    return path, geotiff(path, 1, 1, 1, spp=65535, pad_to=542)


@pytest.fixture(scope="module")
def claim_build(tilepack, work, claim):
    path, _ = claim
    r = run_measured([tilepack, "build", path, "-o", os.path.join(work, "claim.mbtiles"), "--memory", "512MiB"], timeout=60)
    if OLD_BIN:
        o = run_measured([OLD_BIN, "build", path, "-o", os.path.join(work, "old-claim.mbtiles"), "--memory", "512MiB"],
                         timeout=60, limit_as="4G")
        print(f"info old binary, 65,535 bands under a 4 GiB address-space limit: exit {o[0]}, "
              f"VmHWM {o[3]:.1f} MiB, {o[4]:.1f} s, stderr {o[2].strip().splitlines()[-1:]!r}")
    return r


def test_the_claim_is_542_bytes(claim):
    assert claim[1] == 542, f"{claim[1]} bytes"


def test_65535_bands_refused_with_one_line_exit_2(claim, claim_build):
    status, out, err, peak, secs = claim_build
    lines = [l for l in err.splitlines() if l.strip()]
    want = f"error: {claim[0]}: 65535 bands; tilepack reads at most 4096"
    assert status == 2 and lines == [want], f"exit {status}, stderr {lines!r}"


def test_65535_bands_refused_within_64_mib(claim_build):
    status, out, err, peak, secs = claim_build
    assert 0 < peak < 64, f"VmHWM {peak:.1f} MiB, {secs:.2f} s"


# 2. 4,096 bands (at the cap) do not fit 512 MiB: refused by the memory plan.

@pytest.fixture(scope="module")
def wide_build(tilepack, work):
    wide = os.path.join(work, "bands-4096.tif")
    geotiff(wide, 16, 16, 4096)
    return wide, run_measured([tilepack, "build", wide, "-o", os.path.join(work, "wide.mbtiles"), "--memory", "512MiB"],
                              timeout=60)


def test_4096_bands_that_cannot_fit_512mib_refused_naming_the_figure(wide_build):
    wide, (status, out, err, peak, secs) = wide_build
    lines = [l for l in err.splitlines() if l.strip()]
    ok = (status == 2 and len(lines) == 1 and lines[0].startswith(f"error: {wide}: 4096 bands of 1 byte need ")
          and lines[0].endswith("to build, more than --memory 512 MiB"))
    assert ok, f"exit {status}, stderr {lines!r}"


def test_4096_bands_refused_before_reading_pixels(wide_build):
    wide, (status, out, err, peak, secs) = wide_build
    assert 0 < peak < 64, f"VmHWM {peak:.1f} MiB, {secs:.2f} s"


# 3. 64 bands that fit: built within the budget.

@pytest.fixture(scope="module")
def many_build(tilepack, work):
    many = os.path.join(work, "bands-64.tif")
    geotiff(many, 256, 256, 64, tile=128)
    r = run_measured([tilepack, "build", many, "-o", os.path.join(work, "many.mbtiles"),
                      "--memory", "512MiB", "--bands", "1,2,3"], timeout=110)
    if OLD_BIN:
        o = run_measured([OLD_BIN, "build", many, "-o", os.path.join(work, "old-many.mbtiles"),
                          "--memory", "512MiB", "--bands", "1,2,3"], timeout=110)
        print(f"info old binary, 64 bands: exit {o[0]}, VmHWM {o[3]:.1f} MiB, {o[4]:.1f} s")
    return r


def test_64_bands_built_with_memory_512mib(many_build):
    status, out, err, peak, secs = many_build
    assert status == 0, f"exit {status} {err.strip()[-300:]}"


def test_64_bands_built_within_512_mib(many_build):
    status, out, err, peak, secs = many_build
    assert 0 < peak <= 512, f"VmHWM {peak:.1f} MiB, {secs:.1f} s"


# 4. serve --budget 64MiB under elevation bombs and 100 MB blobs.

@pytest.fixture(scope="module")
def served(tilepack, work):
    lib, elev, bad, good, stream_bytes = build_archives(tilepack, work)
    print(f"info {len(elev)} elevation rows of a {stream_bytes} byte stream inflating to 64 MiB, "
          f"{len(bad)} tiles with 100 MB blobs, {len(good)} good tiles")
    r = serve_case(tilepack, work, elev, bad, good)
    if OLD_BIN:
        o = serve_case(OLD_BIN, work, elev, bad, good)
        if o:
            print(f"info old binary, serve --budget 64MiB: VmHWM {o['peak']:.1f} MiB after {o['requests']} requests "
                  f"in {o['seconds']:.1f} s; statuses { {k: sorted(map(str, v)) for k, v in o['statuses'].items()} }")
    if r is None:
        pytest.fail("serve did not start: " + open(os.path.join(work, "serve.err")).read()[-500:])
    return r


def test_serve_stayed_up(served):
    assert served["alive"]


def test_elevation_bombs_refused(served):
    st = served["statuses"]["bomb"]
    assert st and all(isinstance(s, int) and s >= 400 for s in st), f"statuses {sorted(map(str, st))}"


def test_100_mb_blobs_refused(served):
    st = served["statuses"]["blob"]
    assert st and all(isinstance(s, int) and s >= 400 for s in st), f"statuses {sorted(map(str, st))}"


def test_good_tiles_still_served(served):
    st = served["statuses"]["good"]
    assert st == {200}, f"statuses {sorted(map(str, st))}"


def test_serve_budget_64mib_under_128_mib(served):
    r = served
    assert 0 < r["peak"] < 128, f"VmHWM {r['peak']:.1f} MiB after {r['requests']} requests in {r['seconds']:.1f} s"
