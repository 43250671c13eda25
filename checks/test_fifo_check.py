"""Issue 27, Must-show 1 (FIFOs): every place tilepack reads a path the user gives or a file in
a library it scans gets a FIFO instead, and must answer at once with a one-line error naming
the path and saying it is a FIFO (exit 2), or — for a library scan that skips what it cannot
use — carry on without it. Never a hang: each command runs under `timeout 10` (exit 124 is a
failure). A FIFO that nobody writes blocks open(2) for reading for ever, so a reader that
forgets O_NONBLOCK shows here as a timeout.

Usage: python3 -m pytest checks/test_fifo_check.py        (BIN=path/to/tilepack; default the debug build)
"""
import os
import shutil
import subprocess
import time
import urllib.request

import pytest

from checks.lib.common import free_port
from checks.lib.store import sample_store

SOURCE_FIFO_VRT = """<VRTDataset rasterXSize="10" rasterYSize="10"><SRS>EPSG:4326</SRS><GeoTransform>6,0.01,0,46,0,-0.01</GeoTransform>
<VRTRasterBand dataType="Byte" band="1"><SimpleSource><SourceFilename relativeToVRT="1">fifo.tif</SourceFilename><SourceBand>1</SourceBand></SimpleSource></VRTRasterBand></VRTDataset>
"""


@pytest.fixture(scope="module")
def store(tilepack, tmp_path_factory):
    """The sample store; the FIFOs and the libraries holding one in its work directory."""
    s = sample_store(str(tmp_path_factory.mktemp("fifo-check")), tilepack)
    w = s.work
    for name in ("fifo.tif", "fifo.vrt", "fifo.mbtiles", "fifo.json", "fifo.jwk", "fifo.txt"):
        os.mkfifo(os.path.join(w, name))
    with open(os.path.join(w, "source-fifo.vrt"), "w") as f:
        f.write(SOURCE_FIFO_VRT)
    # A FIFO inside a library: the signed catalog; an archive.
    shutil.copytree(s.lib, os.path.join(w, "lib-catalog"))
    os.remove(os.path.join(w, "lib-catalog", "catalog.jws"))
    os.mkfifo(os.path.join(w, "lib-catalog", "catalog.jws"))
    shutil.copytree(s.lib, os.path.join(w, "lib-archive"))
    os.mkfifo(os.path.join(w, "lib-archive", "extra.mbtiles"))
    return s


def run10(store, argv):
    """argv under `timeout 10` in the work directory, stdin from /dev/null: (status, stderr)."""
    p = subprocess.run(["timeout", "10"] + [str(a) for a in argv], cwd=store.work, env=store.env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
    return p.returncode, p.stderr


# (name, the FIFO's name as the error shows it, arguments after the binary): each exits 2 within
# 10 s (64, ArgumentParser's status, for a file given as an option value and checked with the
# arguments), one error line naming the path as a FIFO (a library's "warning:" lines about the
# same file may come before it).
def refused_cases(dem, s):
    return [
        # Inputs of build and info.
        ("info FIFO.tif", "fifo.tif", ["info", "fifo.tif"]),
        ("build FIFO.tif", "fifo.tif", ["build", "fifo.tif", "-o", "a.mbtiles", "--progress", "none"]),
        ("build FIFO.vrt", "fifo.vrt", ["build", "fifo.vrt", "-o", "a.mbtiles", "--progress", "none"]),
        ("build VRT whose source is a FIFO", "fifo.tif", ["build", "source-fifo.vrt", "-o", "a.mbtiles", "--progress", "none"]),
        ("build mosaic with a FIFO member", "fifo.tif", ["build", dem, "fifo.tif", "-o", "a.mbtiles", "--progress", "none"]),
        ("build --proj-db FIFO", "fifo.json", ["build", dem, "--proj-db", "fifo.json", "-o", "a.mbtiles", "--progress", "none"]),
        ("build --tint FIFO (a colour file)", "fifo.txt", ["build", dem, "--tint", "./fifo.txt", "-o", "a.mbtiles", "--progress", "none"]),
        # Archives given by path.
        ("info FIFO.mbtiles", "fifo.mbtiles", ["info", "fifo.mbtiles"]),
        ("verify FIFO.mbtiles", "fifo.mbtiles", ["verify", "fifo.mbtiles"]),
        ("query --archive FIFO.mbtiles", "fifo.mbtiles", ["query", "45.85", "6.88", "12", "--archive", "fifo.mbtiles"]),
        ("merge FIFO shard", "fifo.mbtiles", ["merge", "fifo.mbtiles", "-o", "m.mbtiles", "--quiet"]),
        # Store files given by path.
        ("store verify FIFO token", "fifo.txt", ["store", "verify", "fifo.txt", "--trust", s.trust] if s else None),
        ("store list --trust FIFO", "fifo.json", ["store", "list", "--library", s.lib, "--trust", "fifo.json"] if s else None),
        ("catalog sign FIFO catalog", "fifo.json", ["catalog", "sign", "fifo.json", "--key", os.path.join(s.pub, "publisher.jwk")] if s else None),
        ("catalog sign --key FIFO", "fifo.jwk", ["catalog", "sign", os.path.join(s.lib, "catalog.json"), "--key", "fifo.jwk"] if s else None),
        # The signed catalog in a library.
        ("store list with a FIFO catalog.jws", "catalog.jws", ["store", "list", "--library", "lib-catalog", "--trust", s.trust] if s else None),
    ]


REFUSED = [c[0] for c in refused_cases("DEM", None)]


def assert_refused(status, err, fifo):
    lines = [l for l in err.splitlines() if l.strip() and not l.startswith("warning:")]
    assert status in (2, 64) and len(lines) == 1 and fifo in lines[0] and "is a FIFO, not a regular file" in lines[0], \
        f"exit {status}: {err[:300]!r}"


@pytest.mark.parametrize("name", REFUSED)
def test_refused_exit_2_one_line_naming_the_fifo(tilepack, store, sample_regions, name):
    """{name}: exit 2, one line naming the FIFO"""
    cases = {c[0]: c for c in refused_cases(os.path.join(sample_regions, "montblanc-dem.tif"), store)}
    _, fifo, args = cases[name]
    status, err = run10(store, [tilepack] + args)
    assert_refused(status, err, fifo)


def test_store_entitlements_with_a_fifo_ledger(tilepack, store):
    """store entitlements with a FIFO ledger: exit 2, one line naming the FIFO"""
    ledger_dir = os.path.join(store.env["XDG_DATA_HOME"], "tilepack")
    os.makedirs(ledger_dir, exist_ok=True)
    ledger = os.path.join(ledger_dir, "ledger.sqlite")
    if os.path.exists(ledger):
        os.remove(ledger)
    os.mkfifo(ledger)
    try:
        status, err = run10(store, [tilepack, "store", "entitlements", *store.opts()])
    finally:
        os.remove(ledger)
    assert_refused(status, err, "ledger.sqlite")


# A library holding a FIFO .mbtiles: finishes within 10 s (any exit but a timeout), no crash.
@pytest.mark.parametrize("cmd", ["query 45.85 6.88 10", "render 45.85 6.88 10 -o r.png", "stress --requests 50"],
                         ids=["query", "render", "stress"])
def test_over_a_library_holding_a_fifo_mbtiles_answers_within_10_s_without_a_crash(tilepack, store, cmd):
    words = cmd.split()
    extra = []
    if words[0] == "stress":
        words, extra = ["stress"], ["--requests", "50"]
    status, err = run10(store, [tilepack, *words, "--library", "lib-archive", "--trust", store.trust, *extra])
    assert status != 124 and status < 128, f"exit {status}: {err[:300]!r}"


def test_serve_over_a_library_holding_a_fifo_mbtiles(tilepack, store):
    """serve must start (or refuse) at once, and answer: starts and answers, or refuses at once (exit 2)"""
    port = free_port()
    with open(os.path.join(store.work, "serve.err"), "w+") as err:
        p = subprocess.Popen(["timeout", "20", tilepack, "serve", "--library", "lib-archive", "--trust", store.trust,
                              "--port", str(port)], cwd=store.work, env=store.env, stdout=subprocess.DEVNULL, stderr=err)
        up = False
        for _ in range(50):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
                    if r.status < 400:
                        up = True
                        break
            except OSError:
                pass
            if p.poll() is not None:
                break
            time.sleep(0.2)
        if p.poll() is None:
            p.terminate()
            p.wait()
            assert up, "serve over a library holding a FIFO .mbtiles starts but does not answer"
        else:
            err.seek(0)
            assert p.returncode == 2, f"serve over a library holding a FIFO .mbtiles refuses at once (exit 2): " \
                                      f"exit {p.returncode}: {err.read()[:300]}"
