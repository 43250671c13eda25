"""A refund while `tilepack serve` runs (issue 23, Must show 4): 20 rounds of buy → serve has
the product's tiles open (5 of them requested, so cached) → `store refund` → right after the
refund exits, those 5 and 5 never requested are all 403. Reports the time from the refund's exit
to the first 403 (must be under one second) over the rounds.

Store library as checks/lib/store.py sets it up.

    python3 -m pytest -s checks/test_revocation_check.py   (-s prints the latencies)
"""
import http.client
import json
import math
import statistics
import subprocess
import time

import pytest

from checks.lib.common import Serve
from checks.lib.store import sample_store

CHAMONIX = "com.tilepack.samples.montblanc.chamonix"


def tile_of(lon, lat, z):
    n = 2 ** z
    return (int((lon + 180) / 360 * n),
            int((1 - math.log(math.tan(math.radians(lat)) + 1 / math.cos(math.radians(lat))) / math.pi) / 2 * n))


@pytest.fixture(scope="module")
def store(tilepack, tmp_path_factory):
    s = sample_store(str(tmp_path_factory.mktemp("tilepack-revocation")), tilepack)
    r = subprocess.run([tilepack, "store", "buy", CHAMONIX, *s.opts()], env=s.env, capture_output=True, text=True)
    assert r.returncode == 0, f"first purchase: {r.stderr}"
    return s


@pytest.fixture(scope="module")
def server(tilepack, store):
    with Serve([*store.opts(), "--log-level", "error"], binary=tilepack, env=store.env,
               stdout=f"{store.work}/serve.out", stderr=f"{store.work}/serve.err") as s:
        yield s


@pytest.fixture(scope="module")
def candidates():
    """Tiles well inside the Chamonix polygon (z12 and z13 around Chamonix and Argentière)."""
    out = []
    for lon, lat in [(6.80, 45.93), (6.87, 45.92), (6.92, 45.95), (6.95, 45.96), (6.78, 45.90), (6.84, 45.96)]:
        for z in (12, 13):
            x, y = tile_of(lon, lat, z)
            for region in ("montblanc-color", "montblanc-dem"):
                path = f"/tiles/{region}/{z}/{x}/{y}.png"
                if path not in out:
                    out.append(path)
    return out


def test_10_distinct_tiles_inside_the_product(candidates):
    assert len(candidates[5:10]) == 5, f"{len(candidates)} candidates"


@pytest.fixture(scope="module")
def rounds(tilepack, store, server, candidates):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)

    def status(path):
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        return r.status

    opts = store.opts()
    cached, uncached = candidates[:5], candidates[5:10]
    latencies, bad_rounds = [], []
    for round_ in range(20):
        if round_ > 0:
            r = subprocess.run([tilepack, "store", "buy", CHAMONIX, *opts], env=store.env, capture_output=True)
            if r.returncode != 0:
                bad_rounds.append(f"round {round_}: buy failed: {r.stderr.decode().strip()}")
                continue
        deadline = time.monotonic() + 5
        while not all(status(p) == 200 for p in cached) and time.monotonic() < deadline:
            time.sleep(0.01)
        if not all(status(p) == 200 for p in cached):
            bad_rounds.append(f"round {round_}: the bought tiles did not open")
            continue
        tx = json.loads(subprocess.run([tilepack, "store", "entitlements", "--json", *opts], env=store.env,
                                       capture_output=True).stdout.splitlines()[0])["transaction_id"]
        r = subprocess.run([tilepack, "store", "refund", tx, *opts], env=store.env, capture_output=True)
        exited = time.monotonic()
        first = None
        while time.monotonic() - exited < 5:
            if status(cached[0]) == 403:
                first = time.monotonic() - exited
                break
        statuses = [status(p) for p in cached + uncached]
        if r.returncode != 0 or first is None or any(s != 403 for s in statuses):
            bad_rounds.append(f"round {round_}: refund exit {r.returncode}, first 403 after {first}, statuses {statuses}")
            continue
        latencies.append(first)
    conn.close()
    if latencies:
        ms = sorted(l * 1000 for l in latencies)
        print(f"refund exit → first 403 over {len(ms)} rounds: min {ms[0]:.1f} ms, median {statistics.median(ms):.1f} ms, "
              f"max {ms[-1]:.1f} ms")
    return latencies, bad_rounds


def test_20_rounds_right_after_each_refund_the_tiles_are_all_403(rounds):
    """20 rounds: right after each refund the 5 cached and 5 uncached tiles are all 403"""
    latencies, bad_rounds = rounds
    assert not bad_rounds, bad_rounds[:2]


def test_the_slowest_round_saw_its_first_403_under_1000_ms(rounds):
    """the slowest round saw its first 403 under 1000 ms after the refund exited"""
    latencies, bad_rounds = rounds
    assert latencies, "no round completed"
    slowest = max(latencies) * 1000
    assert slowest < 1000, f"the slowest round saw its first 403 {slowest:.1f} ms after the refund exited"
