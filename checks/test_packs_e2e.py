"""Region packs end to end over SampleRegions (issue 24, Must-show 2), as a publisher, a shop and
a device would run them:

pack → serve --packs → list packs with sizes → download without a transaction (401, exit 3) →
buy (test App Store, Sandbox) → download through a pausing proxy, SIGKILLed at 10 random byte
offsets and restarted each time (installed pack byte-identical to the published one, bytes
forwarded < 1.1 × the pack) → a corrupted byte is refused (exit 2, nothing installed, no .part)
→ a 256×256 block of montblanc-color.tif rewritten, rebuilt, packed as version 2 with --previous
→ download --update moves < 20 % of the pack through the proxy and ends with the tiles of a
fresh version-2 download → refund → the pack download is 403 (exit 3) and the installed pack is
locked.

Works in a temporary directory (checks/lib/store.py), touching nothing of the user's. The steps
run in order, played once by a module fixture; each finding is a test of its own.

    python3 -m pytest checks/test_packs_e2e.py
"""
import json
import os
import random
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from checks.lib.common import Outcomes, tilepack_bin
from checks.lib.packs import CHAMONIX, ROOT, PausingProxy, pack, rewrite_block, run, sample_store, sha256, start_serve

FINDINGS = [
    "pack writes free, two regions and the bundle",
    "the Chamonix pack has edge tiles masked and whole tiles copied",
    "verify: every tile of the Chamonix pack matches its manifest and decodes",
    "GET /packs lists every pack with its size before anything is bought",
    "download without a transaction exits 3 (401 missingTransaction), nothing installed",
    "buy the Chamonix valley (test App Store, Sandbox)",
    "10 kills mid-body at random offsets, then the download completes",
    "the installed pack is byte-identical to the published one",
    "bytes forwarded in all < 1.1 × the pack",
    "the last run resumed from the bytes already there",
    "no .part left after the install",
    "library remove frees the pack",
    "a byte flipped in transit: exit 2, nothing installed, no .part left",
    "downloaded again cleanly",
    "the edited colour source rebuilds",
    "the catalog is signed again (new archive hash)",
    "pack --previous writes Chamonix version 2 and its delta",
    "download --check: exit 10, an update is available",
    "download --update takes the delta: bytes moved < 20 % of the pack",
    "the updated pack holds exactly the tiles of a fresh version-2 download",
    "verify: the delta-updated pack matches version 2's tile index, every tile decodes",
    "download --check after the update: exit 0, up to date",
    "refund the purchase at the store",
    "the buyer's old token, presented after the refund, gets 403 revoked",
    "the device itself no longer presents a transaction for it: exit 3",
    "library list: the installed Chamonix pack is not owned after the refund",
    "rendering a Chamonix tile from the installed pack is locked (exit 3)",
]


def scenario(check, work, procs):
    env, lib, trust, pub, sim = sample_store(work)
    key = os.path.join(pub, "publisher.jwk")
    packs1, packs2 = os.path.join(work, "packs-v1"), os.path.join(work, "packs-v2")
    device = os.path.join(work, "device")
    os.makedirs(device)
    dev = ["--library", device, "--trust", trust, "--ledger", os.path.join(work, "device-ledger.sqlite"), "--simulator", sim]

    r, pubs = pack(env, lib, packs1, key)
    check("pack writes free, two regions and the bundle", r.returncode == 0 and list(pubs) ==
          ["free", CHAMONIX, "com.tilepack.samples.montblanc.courmayeur", "com.tilepack.samples.montblanc.bundle"], r.stderr[-500:])
    region = pubs.get(CHAMONIX)
    if region is None:
        return
    pack1 = os.path.join(packs1, CHAMONIX + ".mbtiles")
    size = os.path.getsize(pack1)
    check("the Chamonix pack has edge tiles masked and whole tiles copied", region["masked_tiles"] > 0 and region["whole_tiles"] > 0)
    r = run(["verify", pack1], env)
    check("verify: every tile of the Chamonix pack matches its manifest and decodes", r.returncode == 0, r.stdout[-300:] + r.stderr[-300:])

    serve, port = start_serve(env, lib, packs1, os.path.join(work, "serve.log"))
    procs.append(serve)
    proxy = PausingProxy(port)
    server = f"http://127.0.0.1:{proxy.port}"
    listing = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/packs"))
    sizes = {p["pack_id"]: p["total_bytes"] for p in listing["packs"]}
    check("GET /packs lists every pack with its size before anything is bought",
          sizes.get(CHAMONIX) == size and all(p.get("manifest") and p.get("url") for p in listing["packs"]), str(sizes))
    print(f"     Chamonix valley: {size / 1e6:.1f} MB; free overview: {sizes.get('free', 0) / 1e6:.1f} MB")

    r = run(["download", CHAMONIX, "--server", server, *dev, "--json"], env)
    check("download without a transaction exits 3 (401 missingTransaction), nothing installed",
          r.returncode == 3 and "missingTransaction" in r.stderr and not os.path.exists(os.path.join(device, "packs", CHAMONIX + ".mbtiles")),
          f"exit {r.returncode}: {r.stderr[-300:]}")

    r = run(["store", "buy", CHAMONIX, *dev], env)
    check("buy the Chamonix valley (test App Store, Sandbox)", r.returncode == 0, r.stderr[-300:])

    installed = os.path.join(device, "packs", CHAMONIX + ".mbtiles")
    offsets = sorted(random.Random(24).sample(range(4096, size - 4096), 10))
    kills, bad = 0, []
    total = 0
    for offset in offsets:
        proxy.reset(pause_at=offset)
        p = subprocess.Popen([tilepack_bin(), "download", CHAMONIX, "--server", server, *dev, "--progress", "none"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        paused = proxy.paused.wait(60)
        time.sleep(0.2)  # let the client write what it received
        p.send_signal(signal.SIGKILL)
        p.wait()
        total += proxy.forwarded
        kills += paused
        if os.path.exists(installed):
            bad.append(f"installed after a kill at {offset}")
    proxy.reset()
    r = run(["download", CHAMONIX, "--server", server, *dev, "--json"], env)
    total += proxy.forwarded
    result = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 and r.stdout.strip() else {}
    check("10 kills mid-body at random offsets, then the download completes", kills == 10 and r.returncode == 0 and not bad,
          f"{kills} stalls, exit {r.returncode}, {bad}, {r.stderr[-300:]}")
    check("the installed pack is byte-identical to the published one", os.path.exists(installed) and sha256(installed) == sha256(pack1))
    check("bytes forwarded in all < 1.1 × the pack", total < 1.1 * size, f"{total} for {size}: ratio {total / size:.3f}")
    check("the last run resumed from the bytes already there", result.get("resumed_from", 0) > 0 and result.get("mode") == "full", str(result))
    check("no .part left after the install", not any(n.endswith(".part") for n in os.listdir(os.path.join(device, "packs"))))
    print(f"     forwarded {total} bytes for a {size}-byte pack ({total / size:.3f}×) over 11 connections")

    r = run(["library", "remove", CHAMONIX, *dev], env)
    check("library remove frees the pack", r.returncode == 0 and not os.path.exists(installed), r.stderr[-200:])
    proxy.reset(corrupt_at=size // 2)
    r = run(["download", CHAMONIX, "--server", server, *dev], env)
    check("a byte flipped in transit: exit 2, nothing installed, no .part left",
          r.returncode == 2 and not os.path.exists(installed) and not any(n.endswith(".part") for n in os.listdir(os.path.join(device, "packs"))),
          f"exit {r.returncode}: {r.stderr[-300:]}")
    proxy.reset()
    r = run(["download", CHAMONIX, "--server", server, *dev], env)
    check("downloaded again cleanly", r.returncode == 0 and sha256(installed) == sha256(pack1), r.stderr[-300:])

    # Version 2: one 256×256 block of the colour source rewritten, the archive rebuilt.
    tif = os.path.join(work, "montblanc-color.tif")
    rewrite_block(os.path.join(ROOT, "SampleRegions/montblanc-color.tif"), tif)
    r = run(["build", tif, "-o", os.path.join(lib, "montblanc-color.mbtiles"), "--codec", "png", "--max-zoom", "13", "--progress", "none"], env)
    check("the edited colour source rebuilds", r.returncode == 0, r.stderr[-300:])
    r = run(["catalog", "sign", os.path.join(lib, "catalog.json"), "--key", key], env)
    check("the catalog is signed again (new archive hash)", r.returncode == 0, r.stderr[-300:])
    r, pubs2 = pack(env, lib, packs2, key, previous=packs1)
    v2 = pubs2.get(CHAMONIX, {})
    delta = os.path.join(packs2, f"{CHAMONIX}.v1-v2.delta.mbtiles")
    check("pack --previous writes Chamonix version 2 and its delta", r.returncode == 0 and v2.get("change") == "updated"
          and v2["manifest"]["version"] == 2 and os.path.exists(delta), r.stderr[-300:] + str(v2)[:300])
    serve.kill()
    serve.wait()
    serve, port = start_serve(env, lib, packs2, os.path.join(work, "serve.log"))
    procs.append(serve)
    proxy.upstream = port

    r = run(["download", CHAMONIX, "--server", server, *dev, "--check"], env)
    check("download --check: exit 10, an update is available", r.returncode == 10, f"exit {r.returncode}: {r.stderr[-200:]}")
    proxy.reset()
    r = run(["download", CHAMONIX, "--server", server, *dev, "--update", "--json"], env)
    moved = proxy.forwarded
    upd = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 and r.stdout.strip() else {}
    pack2 = os.path.join(packs2, CHAMONIX + ".mbtiles")
    size2 = os.path.getsize(pack2)
    check("download --update takes the delta: bytes moved < 20 % of the pack",
          r.returncode == 0 and upd.get("mode") == "delta" and upd.get("version") == 2 and moved < 0.2 * size2,
          f"{moved} bytes moved, pack {size2}; exit {r.returncode}, {upd}, {moved / size2:.3f}, {r.stderr[-300:]}")
    fresh = os.path.join(work, "fresh")
    os.makedirs(fresh)
    for name in ("catalog.jws",):
        if os.path.exists(os.path.join(device, name)):
            shutil.copy(os.path.join(device, name), fresh)
    fdev = ["--library", fresh] + dev[2:]
    r = run(["download", CHAMONIX, "--server", server, *fdev, "--json"], env)
    info_upd = run(["info", installed, "--json"], env)
    info_fresh = run(["info", os.path.join(fresh, "packs", CHAMONIX + ".mbtiles"), "--json"], env)
    try:
        a, b = json.loads(info_upd.stdout), json.loads(info_fresh.stdout)
        same = a["pack"]["manifest"]["tile_index_sha256"] == b["pack"]["manifest"]["tile_index_sha256"] and a["tiles"] == b["tiles"]
    except (ValueError, KeyError, TypeError) as error:
        same, a = False, error
    check("the updated pack holds exactly the tiles of a fresh version-2 download", r.returncode == 0 and same, str(a)[:300])
    r = run(["verify", installed], env)
    check("verify: the delta-updated pack matches version 2's tile index, every tile decodes", r.returncode == 0, r.stderr[-300:])
    r = run(["download", CHAMONIX, "--server", server, *dev, "--check"], env)
    check("download --check after the update: exit 0, up to date", r.returncode == 0, f"exit {r.returncode}")

    # Refund: the server refuses the old token, the device locks the installed pack.
    ledger = os.path.join(work, "device-ledger.sqlite")
    r = run(["store", "entitlements", *dev, "--json"], env)
    txid = None
    for line in r.stdout.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        for e in row.get("entitlements", [row]):
            if isinstance(e, dict) and e.get("product_id") == CHAMONIX:
                txid = e.get("transaction_id")
    exported = os.path.join(work, "exported")
    run(["store", "export", *dev, "-o", exported], env)
    old_token = open(os.path.join(exported, f"transaction-{txid}.jws")).read().strip() if txid else ""
    r = run(["store", "refund", str(txid), *dev], env)
    check("refund the purchase at the store", txid is not None and r.returncode == 0, r.stderr[-300:])
    request = urllib.request.Request(f"http://127.0.0.1:{port}/packs/{CHAMONIX}", headers={"Authorization": "Bearer " + old_token})
    try:
        status, body = urllib.request.urlopen(request).status, b""
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    check("the buyer's old token, presented after the refund, gets 403 revoked", status == 403 and b"revoked" in body,
          f"{status} {body[:200]!r}")
    r = run(["library", "remove", CHAMONIX, *dev], env)
    r = run(["download", CHAMONIX, "--server", server, *dev], env)
    check("the device itself no longer presents a transaction for it: exit 3", r.returncode == 3, f"exit {r.returncode}: {r.stderr[-300:]}")
    # The pack installed before the refund: put it back and look at a Chamonix tile.
    os.makedirs(os.path.join(device, "packs"), exist_ok=True)
    shutil.copy(pack2, installed)
    shutil.copy(os.path.join(packs2, CHAMONIX + ".manifest.jws"), os.path.join(device, "packs"))
    r = run(["library", "list", *dev, "--json"], env)
    rows = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    row = next((x for x in rows if x.get("pack_id") == CHAMONIX), {})
    check("library list: the installed Chamonix pack is not owned after the refund", row.get("owned") is False, r.stdout[-300:])
    r = run(["render", "--library", device, "--trust", trust, "--ledger", ledger, "--tile", "12/2126/1459", "-o", os.path.join(work, "t.png")], env)
    check("rendering a Chamonix tile from the installed pack is locked (exit 3)", r.returncode == 3, f"exit {r.returncode}: {r.stdout[-200:]} {r.stderr[-200:]}")




@pytest.fixture(scope="module")
def outcomes(tilepack, tmp_path_factory):
    work = str(tmp_path_factory.mktemp("packs-e2e"))
    check, procs = Outcomes(), []
    try:
        check.play(scenario, work, procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return check


@pytest.mark.parametrize("finding", FINDINGS)
def test_packs_e2e(outcomes, finding):
    outcomes.check(finding)
