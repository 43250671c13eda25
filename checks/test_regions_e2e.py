"""The region store end to end over SampleRegions, as a publisher and a person would use it:
sign the catalog (PyJWT verifies catalog.jws) → trust file → list → query a locked point
(exit 3) → buy → query unlocked (colour, elevation) → the stored transaction exports and
verifies → buy again is "already owned" → restore twice (idempotent) → a hand-edited ledger
row is rejected and grants nothing → refund → locked again → SIGKILLed purchases are
delivered by the next command → concurrent buyers lose nothing → Apple's own Python verifier
accepts the exported transactions and renewal infos → a new device restores with --account →
without a trust file the library is open.

Works in a temporary directory with its own ledger, test App Store and trust file
(checks/lib/store.py), so nothing of the user's is touched. The steps run in order on one
ledger, played once by a module fixture; each finding is a test of its own.

    python3 -m pytest checks/test_regions_e2e.py
"""
import glob
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import time

import pytest

from checks.lib.common import ROOT, Outcomes
from checks.lib.store import sample_store

POINT = ["45.85", "6.88", "12"]            # near the Aiguille du Midi, zoom 12 (the free tier ends at 10)
CHAMONIX = "com.tilepack.samples.montblanc.chamonix"

FINDINGS = [
    "PyJWT verifies catalog.jws with the publisher's public JWK and refuses it tampered",
    "store list shows four products",
    "store list --json has the documented fields, nothing owned",
    "query of a locked point exits 3",
    "query names the product to buy",
    "query --json: library store, locked true, unlock offers, nothing shown",
    "the free tier (zoom 10) is open",
    "store buy",
    "a fresh ledger draws an account and says how to restore it",
    "query after buying exits 0",
    "query after buying shows colour and elevation",
    "buying an owned region again: already owned, exit 0, nothing charged",
    "the exported transaction verifies (ES256, x5c to the pinned test root, Sandbox)",
    "restore twice is idempotent",
    "a hand-edited ledger row is rejected and reported",
    "the edited row grants nothing on the other side (locked, exit 3)",
    "restore repairs the edited row",
    "store refund",
    "after the refund the point is locked again (exit 3)",
    "after killed purchases the ledger verifies (no rejected rows)",
    "killed buys: charged at most once, nothing left unfinished, delivered if charged",
    "ledger passes SQLite's integrity check",
    "4 concurrent buyer processes: all succeed, all owned, rows verify, Chamonix charged at most once",
    "buying an unknown product is a one-line error, non-zero exit",
    "Apple's Python verifier accepts every exported token (renewal infos included)",
    "a new device restores with --account (the bundle opens Courmayeur)",
    "without a trust file the library is open: exit 0, \"library\": \"open\"",
    "a fresh home: buy with the default ledger creates $XDG_DATA_HOME/tilepack/ledger.sqlite",
]


def count(db, sql, *args):
    c = sqlite3.connect(db)
    try:
        return c.execute(sql, args).fetchone()[0]
    finally:
        c.close()


def scenario(check, T, s):
    O = s.opts()
    env = s.env
    work = s.work
    store_db = os.path.join(s.sim, "store.sqlite")

    def tp(*args, **kw):
        return subprocess.run([T, *map(str, args)], env=env, cwd=work, capture_output=True, text=True, timeout=300, **kw)

    def rows(db):
        return count(db, "select count(*) from transactions")

    r = subprocess.run([os.path.join(ROOT, "Scripts", "jws-check"), os.path.join(s.lib, "catalog.jws"),
                        os.path.join(s.pub, "publisher.public.jwk")], env=env, capture_output=True, text=True)
    check(FINDINGS[0], r.returncode == 0, (r.stdout + r.stderr)[-300:])

    r = tp("store", "list", *O)
    check("store list shows four products", len(r.stdout.splitlines()) == 4, r.stdout)
    r = tp("store", "list", *O, "--json")
    listed = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    check("store list --json has the documented fields, nothing owned",
          listed and all(set(x) >= {"id", "kind", "title", "price", "currency", "bounds", "minzoom", "maxzoom", "owned"}
                         for x in listed) and not any(x["owned"] for x in listed), r.stdout[-300:])

    r = tp("query", *POINT, *O)
    check("query of a locked point exits 3", r.returncode == 3, f"exit {r.returncode}")
    # The point is Chamonix's: Courmayeur (cheaper) shares its tile but would not unlock it.
    check("query names the product to buy", "locked:    buy Chamonix valley (4.99 EUR)" in r.stdout, r.stdout)
    r = tp("query", *POINT, *O, "--json")
    answers = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    check("query --json: library store, locked true, unlock offers, nothing shown",
          answers and all(x["locked"] and x["unlock"] and x["rgba"] is None and x["elevation_m"] is None
                          and x["library"] == "store" for x in answers), r.stdout[-300:])
    r = tp("query", "45.85", "6.88", "10", *O)
    check("the free tier (zoom 10) is open", r.returncode == 0, r.stderr)

    r = tp("store", "buy", CHAMONIX, *O)
    check("store buy", r.returncode == 0, r.stderr)
    check("a fresh ledger draws an account and says how to restore it", "new store account" in r.stderr, r.stderr)
    m = re.search(r"new store account ([0-9a-f-]*):", r.stderr)
    account = m.group(1) if m else ""
    r = tp("query", *POINT, *O)
    check("query after buying exits 0", r.returncode == 0, f"exit {r.returncode}")
    check("query after buying shows colour and elevation", "colour:" in r.stdout and "elevation:" in r.stdout, r.stdout)

    before = rows(store_db)
    r = tp("store", "buy", CHAMONIX, *O)
    check("buying an owned region again: already owned, exit 0, nothing charged",
          r.returncode == 0 and "already owned" in r.stdout and rows(store_db) == before, f"exit {r.returncode}: {r.stdout}")

    r = tp("store", "export", *O, "-o", "exported")
    ok = False
    if r.returncode == 0:
        v = tp("store", "verify", *glob.glob(os.path.join(work, "exported", "transaction-*.jws")), "--trust", s.trust, "--json")
        try:
            j = json.loads(v.stdout)
            ok = v.returncode == 0 and j["valid"] and j["environment"] == "Sandbox" and j["payload"]["productId"].endswith("chamonix")
        except (ValueError, KeyError):
            ok = False
    check("the exported transaction verifies (ES256, x5c to the pinned test root, Sandbox)", ok, r.stderr)

    r1, r2 = tp("store", "restore", *O), tp("store", "restore", *O)
    ents = tp("store", "entitlements", *O, "--json")
    check("restore twice is idempotent", r1.returncode == 0 and r2.returncode == 0 and "0 new, 0 updated" in r2.stdout
          and len(ents.stdout.splitlines()) == 1, r2.stdout)

    # A hand edit: the Chamonix row claims the bundle instead. It must be rejected, never counted.
    c = sqlite3.connect(s.ledger)
    c.execute("update transactions set product_id=?", ("com.tilepack.samples.montblanc.bundle",))
    c.commit()
    c.close()
    os.rename(s.sim, s.sim + ".away")   # offline: the ledger alone decides
    try:
        r = tp("store", "entitlements", *O)
        check("a hand-edited ledger row is rejected and reported", "columnMismatch" in r.stderr and "no entitlements" in r.stdout,
              r.stderr + r.stdout)
        r = tp("query", "45.79", "6.97", "12", *O)
        check("the edited row grants nothing on the other side (locked, exit 3)", r.returncode == 3, f"exit {r.returncode}")
    finally:
        os.rename(s.sim + ".away", s.sim)
    tp("store", "restore", *O)
    r = tp("query", *POINT, *O)
    check("restore repairs the edited row", r.returncode == 0, f"exit {r.returncode}")

    tx = json.loads(tp("store", "entitlements", *O, "--json").stdout.splitlines()[0])["transaction_id"]
    r = tp("store", "refund", tx, *O)
    check("store refund", r.returncode == 0, r.stderr)
    r = tp("query", *POINT, *O)
    check("after the refund the point is locked again (exit 3)", r.returncode == 3, f"exit {r.returncode}")

    # SIGKILL in the middle of purchases: whatever the store charged is delivered next time.
    for _ in range(5):
        p = subprocess.Popen([T, "store", "buy", "com.tilepack.samples.montblanc.courmayeur", *O], env=env, cwd=work,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(random.randrange(9) / 10)
        try:
            p.send_signal(signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
    r = tp("store", "entitlements", *O)
    check("after killed purchases the ledger verifies (no rejected rows)", not r.stderr, r.stderr)
    tp("store", "restore", *O)
    charged = count(store_db, "select count(*) from transactions where product_id like ? and revoked=0", "%courmayeur")
    unfinished = count(store_db, "select count(*) from transactions where finished=0")
    r = tp("query", "45.79", "6.97", "12", *O)
    check("killed buys: charged at most once, nothing left unfinished, delivered if charged",
          charged <= 1 and unfinished == 0 and (charged == 0 or r.returncode == 0),
          f"charged {charged}, unfinished {unfinished}, query exit {r.returncode}")
    check("ledger passes SQLite's integrity check", count(s.ledger, "pragma integrity_check") == "ok")

    # Four processes buying at once (Chamonix twice): every buyer succeeds (bought, or "already
    # owned" when another buyer's subscription or bundle got there first), everything is owned,
    # every row verifies, and the store charged Chamonix at most once (not at all when a bundle
    # got there first).
    buyers = [subprocess.Popen([T, "store", "buy", f"com.tilepack.samples.montblanc.{p}", *O], env=env, cwd=work,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
              for p in ("chamonix", "bundle", "updates", "chamonix")]
    errors, failed = "", 0
    for b in buyers:
        _, err = b.communicate()
        errors += err
        failed += b.returncode != 0
    errors += tp("store", "entitlements", *O).stderr
    charged = count(store_db, "select count(*) from transactions where product_id like ? and revoked=0", "%chamonix")
    listed = [json.loads(l) for l in tp("store", "list", *O, "--json").stdout.splitlines() if l.strip()]
    check("4 concurrent buyer processes: all succeed, all owned, rows verify, Chamonix charged at most once",
          failed == 0 and not errors and charged <= 1 and listed and all(x["owned"] for x in listed),
          f"{failed} failed, Chamonix charged {charged}, stderr {errors[-300:]!r}")

    r = tp("store", "buy", "no.such.product", *O)
    check("buying an unknown product is a one-line error, non-zero exit",
          r.returncode != 0 and len(r.stderr.splitlines()) == 1, f"exit {r.returncode}: {r.stderr!r}")

    # Apple's own verifier (app-store-server-library), given only the test App Store's published
    # root, accepts the account's transactions and renewal infos and refuses each with one byte changed.
    tp("store", "export", *O, "-o", "apple")
    transactions = sorted(glob.glob(os.path.join(work, "apple", "transaction-*.jws")))
    renewals = sorted(glob.glob(os.path.join(work, "apple", "renewal-*.jws")))
    tokens = [f"transaction:{f}" for f in transactions] + [f"renewal-info:{f}" for f in renewals]
    r = subprocess.run([os.path.join(ROOT, "Scripts", "appstore-crosscheck"), "--root", os.path.join(s.sim, "AppStoreRoot.der"),
                        "--bundle-id", "com.tilepack.samples", *tokens], env=env, cwd=work, capture_output=True, text=True)
    last = (r.stdout + r.stderr).strip().splitlines()[-1:] or [""]
    check("Apple's Python verifier accepts every exported token (renewal infos included)",
          " 0 failed" in (r.stdout + r.stderr) and renewals,
          f"{last[0]} over {len(tokens)} tokens (renewal infos included: {len(renewals)})")

    # A new device: a fresh ledger, the same account, restores everything.
    new = os.path.join(work, "new-device.sqlite")
    r3 = tp("store", "restore", *O, "--ledger", new, "--account", account)
    r = tp("query", "45.79", "6.97", "12", *O, "--ledger", new, "--account", account)
    check("a new device restores with --account (the bundle opens Courmayeur)",
          r.returncode == 0 and "restored:" in r3.stdout, f"exit {r.returncode}: {r3.stdout}")

    # A fresh home (no $XDG_DATA_HOME/tilepack yet): the default ledger's directory is made.
    fresh = os.path.join(work, "fresh-home")
    os.makedirs(fresh, exist_ok=True)
    r = subprocess.run([T, "store", "buy", CHAMONIX, *O, "--simulator", s.sim], env=dict(env, XDG_DATA_HOME=fresh),
                       cwd=work, capture_output=True, text=True, timeout=300)
    check(FINDINGS[-1], r.returncode == 0 and os.path.isfile(os.path.join(fresh, "tilepack", "ledger.sqlite")),
          f"exit {r.returncode}: {r.stderr[-300:]}")

    # No trust file: an open library (personal maps), every tile shows, and says so.
    r = tp("query", *POINT, "--library", s.lib, "--json")
    opened = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    check("without a trust file the library is open: exit 0, \"library\": \"open\"",
          r.returncode == 0 and all(x["library"] == "open" for x in opened), r.stdout[-300:])


@pytest.fixture(scope="module")
def outcomes(tilepack, tmp_path_factory):
    s = sample_store(str(tmp_path_factory.mktemp("regions-e2e")), tilepack)
    check = Outcomes()
    check.play(scenario, tilepack, s)
    return check


@pytest.mark.parametrize("finding", FINDINGS)
def test_regions_e2e(outcomes, finding):
    outcomes.check(finding)
