"""Bad input on the way to a device (issue 24, Must-show 4): `tilepack download` against a hostile
pack server (a small Python server in this script that lists the real, signed packs but can lie
about them). Each case must end in one `error:` line on stderr, the documented exit status, the
installed library unchanged (pack files and manifests byte for byte), and no `.part` left
except a resumable one:

  a manifest whose signature does not verify · a pack whose bytes are not the signed ones · a
  delta for another version · a truncated delta · a server that sends more bytes than
  announced · a full disk during the install (the library on a 4 MiB tmpfs; needs root, else
  reported as SKIPPED, never as passed) · a downgrade.

The cases run in order on one device (each on the state the one before left), played once by a
module fixture; each finding is a test of its own.

    python3 -m pytest checks/test_packs_attack.py
"""
import base64
import hashlib
import http.server
import json
import os
import shutil
import sqlite3
import subprocess
import threading
import time

import pytest

from checks.lib.common import Outcomes, tilepack_bin
from checks.lib.packs import CHAMONIX, ROOT, pack, rewrite_block, run, sample_store

FULL_DISK = ["a pack larger than the free space: refused before downloading, with the figures (exit 1)",
             "the disk fills during the download: exit 1, one error line, nothing installed",
             "with room again, the same download resumes and installs"]
FINDINGS = ["pack version 1", "pack version 2", "setup: buy the Chamonix valley",
            "a manifest with a wrong signature: exit 2, nothing installed",
            "a pack whose hash does not match: exit 2, nothing installed, no .part",
            "a server that sends more bytes than announced: exit 1, nothing installed",
            "setup: version 1 installs from the honest listing",
            "a delta for another version: exit 2, version 1 stays installed",
            "a truncated delta: exit 2, version 1 stays installed",
            "setup: version 2 installs by its delta",
            "a downgrade (version 1 offered, 2 installed): exit 2, version 2 stays"] + FULL_DISK


class Hostile:
    """What the server says and sends; changed between cases."""

    def __init__(self, packs_dir, catalog):
        self.dir = packs_dir
        self.catalog = catalog
        self.manifest_text = {}   # pack id → JWS to list instead of the file's
        self.pack_file = {}       # pack id → file to send instead of the pack
        self.delta_file = {}      # (pack id, from) → file to send and list instead of the delta
        self.extra_bytes = 0      # bytes sent past the file (Content-Length says so too)
        self.stall = None         # (offset, event): stop after offset bytes of a pack until event is set

    def manifests(self):
        out = []
        for name in sorted(os.listdir(self.dir)):
            if not name.endswith(".manifest.jws"):
                continue
            pid = name[: -len(".manifest.jws")]
            jws = self.manifest_text.get(pid) or open(os.path.join(self.dir, name)).read().strip()
            payload = json.loads(base64.urlsafe_b64decode(jws.split(".")[1] + "=" * (-len(jws.split(".")[1]) % 4)))
            deltas = []
            for v in range(1, payload["version"]):
                path = self.delta_file.get((pid, v)) or os.path.join(self.dir, f"{pid}.v{v}-v{v + 1}.delta.mbtiles")
                if os.path.exists(path):
                    deltas.append({"from": v, "url": f"/packs/{pid}/deltas/{v}", "bytes": os.path.getsize(path)})
            out.append(dict(payload, manifest=jws, url=f"/packs/{pid}", deltas=deltas))
        return {"packs": out}


def serve(state):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send_bytes(self, status, body, kind="application/json"):
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            parts = self.path.split("/")
            if self.path == "/catalog":
                return self.send_bytes(200, open(state.catalog, "rb").read(), "application/jose")
            if self.path == "/packs":
                return self.send_bytes(200, json.dumps(state.manifests()).encode())
            if len(parts) == 3 and parts[1] == "packs":
                path = state.pack_file.get(parts[2]) or os.path.join(state.dir, parts[2] + ".mbtiles")
            elif len(parts) == 5 and parts[1] == "packs" and parts[3] == "deltas":
                v = int(parts[4])
                path = state.delta_file.get((parts[2], v)) or os.path.join(state.dir, f"{parts[2]}.v{v}-v{v + 1}.delta.mbtiles")
            else:
                return self.send_bytes(404, b'{"error":"notFound","message":"no such route","status":404}')
            data = open(path, "rb").read()
            start = 0
            rng = self.headers.get("Range", "")
            if rng.startswith("bytes=") and rng[6:].endswith("-") and rng[6:-1].isdigit() and int(rng[6:-1]) < len(data):
                start = int(rng[6:-1])
            body = data[start:] + b"\0" * state.extra_bytes
            self.send_response(206 if start else 200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", '"' + hashlib.sha256(data).hexdigest() + '"')
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            if state.stall and len(parts) == 3:
                offset, event = state.stall
                self.wfile.write(body[:offset])
                self.wfile.flush()
                event.wait(30)
                body = body[offset:]
            try:
                self.wfile.write(body)
            except OSError:
                pass

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            pass  # a client that hangs up (killed, or refusing extra bytes) is part of the cases

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def snapshot(device):
    """The installed files (packs and manifests) by name → SHA-256; and the partial downloads."""
    packs = os.path.join(device, "packs")
    names = sorted(os.listdir(packs)) if os.path.isdir(packs) else []
    installed = {n: hashlib.sha256(open(os.path.join(packs, n), "rb").read()).hexdigest()
                 for n in names if n.endswith(".mbtiles") or n.endswith(".manifest.jws")}
    partial = [n for n in names if ".part" in n]
    return installed, partial


def attempt(check, name, env, device_args, expect_status, expect_code, device, allow_part=False, pack_id=CHAMONIX, extra=()):
    before, _ = snapshot(device)
    r = run(["download", pack_id, "--server", env["HOSTILE"], *device_args, *extra], env, timeout=300)
    after, partial = snapshot(device)
    errors = [l for l in r.stderr.splitlines() if l.startswith("error:")]
    ok = (r.returncode == expect_status and len(errors) == 1 and expect_code in errors[0] and before == after
          and (allow_part or not partial))
    check(name, ok, f"exit {r.returncode}, stderr {r.stderr.strip()[-400:]!r}, changed {before != after}, partial {partial}")
    if errors:
        print("     " + errors[0][:220])
    return r


def scenario(check, work):
    env, lib, trust, pub, sim = sample_store(work)
    key = os.path.join(pub, "publisher.jwk")
    packs1, packs2 = os.path.join(work, "packs-v1"), os.path.join(work, "packs-v2")
    r, _ = pack(env, lib, packs1, key)
    if not check("pack version 1", r.returncode == 0, r.stderr[-300:]):
        return None
    tif = os.path.join(work, "montblanc-color.tif")
    rewrite_block(os.path.join(ROOT, "SampleRegions/montblanc-color.tif"), tif)
    run(["build", tif, "-o", os.path.join(lib, "montblanc-color.mbtiles"), "--codec", "png", "--max-zoom", "13", "--progress", "none"], env)
    run(["catalog", "sign", os.path.join(lib, "catalog.json"), "--key", key], env)
    r, _ = pack(env, lib, packs2, key, previous=packs1)
    if not check("pack version 2", r.returncode == 0, r.stderr[-300:]):
        return None

    state = Hostile(packs1, os.path.join(lib, "catalog.jws"))
    server = serve(state)
    env["HOSTILE"] = f"http://127.0.0.1:{server.server_address[1]}"
    device = os.path.join(work, "device")
    os.makedirs(device)
    ledger = os.path.join(work, "device-ledger.sqlite")
    dev = ["--library", device, "--trust", trust, "--ledger", ledger, "--simulator", sim]
    # The catalog, then the purchase: what a device holds before it downloads.
    run(["download", "free", "--server", env["HOSTILE"], *dev], env)
    r = run(["store", "buy", CHAMONIX, *dev], env)
    check("setup: buy the Chamonix valley", r.returncode == 0, r.stderr[-300:])

    # 1. A manifest whose signature does not verify: its payload edited (version 9).
    real = open(os.path.join(packs1, CHAMONIX + ".manifest.jws")).read().strip()
    h, p, s = real.split(".")
    payload = json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
    payload["version"] = 9
    state.manifest_text[CHAMONIX] = h + "." + base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=") + "." + s
    attempt(check, "a manifest with a wrong signature: exit 2, nothing installed", env, dev, 2, "", device)
    state.manifest_text.clear()

    # 2. A pack whose bytes are not the signed ones (same size, one byte changed at rest).
    forged = os.path.join(work, "forged.mbtiles")
    data = bytearray(open(os.path.join(packs1, CHAMONIX + ".mbtiles"), "rb").read())
    data[len(data) // 3] ^= 0x55
    open(forged, "wb").write(data)
    state.pack_file[CHAMONIX] = forged
    attempt(check, "a pack whose hash does not match: exit 2, nothing installed, no .part", env, dev, 2, "SHA-256", device)
    state.pack_file.clear()

    # 3. More bytes than announced.
    state.extra_bytes = 4096
    attempt(check, "a server that sends more bytes than announced: exit 1, nothing installed", env, dev, 1, "", device, allow_part=True)
    state.extra_bytes = 0

    # Version 1 installed cleanly, then version 2 offered with hostile deltas.
    for n in os.listdir(os.path.join(device, "packs")):
        if ".part" in n:
            os.unlink(os.path.join(device, "packs", n))
    r = run(["download", CHAMONIX, "--server", env["HOSTILE"], *dev], env)
    check("setup: version 1 installs from the honest listing", r.returncode == 0, r.stderr[-300:])
    state.dir = packs2
    # The full download is refused too (version 2 with a byte changed): only the delta could succeed.
    forged2 = os.path.join(work, "forged-v2.mbtiles")
    data = bytearray(open(os.path.join(packs2, CHAMONIX + ".mbtiles"), "rb").read())
    data[len(data) // 3] ^= 0x55
    open(forged2, "wb").write(data)
    state.pack_file[CHAMONIX] = forged2

    # 4. A delta for another version: v1→v2's file relabelled as v2→v3.
    other = os.path.join(work, "other-version.delta.mbtiles")
    shutil.copy(os.path.join(packs2, f"{CHAMONIX}.v1-v2.delta.mbtiles"), other)
    db = sqlite3.connect(other)
    db.execute("UPDATE metadata SET value = '2' WHERE name = 'tilepack_delta_from'")
    db.execute("UPDATE metadata SET value = '3' WHERE name = 'tilepack_delta_to'")
    db.commit()
    db.close()
    state.delta_file[(CHAMONIX, 1)] = other
    attempt(check, "a delta for another version: exit 2, version 1 stays installed", env, dev, 2, "delta", device, extra=["--update"])

    # 5. A truncated delta (listed with its truncated size, so the transfer itself is whole).
    truncated = os.path.join(work, "truncated.delta.mbtiles")
    whole = open(os.path.join(packs2, f"{CHAMONIX}.v1-v2.delta.mbtiles"), "rb").read()
    open(truncated, "wb").write(whole[: len(whole) // 2])
    state.delta_file[(CHAMONIX, 1)] = truncated
    attempt(check, "a truncated delta: exit 2, version 1 stays installed", env, dev, 2, "delta", device, extra=["--update"])
    state.delta_file.clear()
    state.pack_file.clear()

    # 6. A downgrade: version 2 installed, version 1 offered.
    r = run(["download", CHAMONIX, "--server", env["HOSTILE"], *dev, "--update"], env)
    check("setup: version 2 installs by its delta", r.returncode == 0, r.stderr[-300:])
    state.dir = packs1
    attempt(check, "a downgrade (version 1 offered, 2 installed): exit 2, version 2 stays", env, dev, 2, "downgrade", device)
    state.dir = packs2

    # 7. A full disk during the install: the library on a 4 MiB tmpfs.
    small = os.path.join(work, "small")
    os.makedirs(small)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", small], capture_output=True).returncode != 0:
        for key in FULL_DISK:
            check.skip(key, "a full disk during the install: cannot mount a tmpfs here (needs root)")
        server.shutdown()
        return None
    sdev = ["--library", small] + dev[2:]
    shutil.copy(os.path.join(lib, "catalog.jws"), small)
    attempt(check, "a pack larger than the free space: refused before downloading, with the figures (exit 1)", env, sdev, 1, "", small)
    # The free pack fits; the disk fills while it downloads.
    release = threading.Event()
    state.stall = (64 * 1024, release)
    proc = subprocess.Popen([tilepack_bin(), "download", "free", "--server", env["HOSTILE"], *sdev],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    subprocess.run(["dd", "if=/dev/zero", f"of={small}/filler", "bs=64k"], capture_output=True)
    release.set()
    out, err = proc.communicate(timeout=120)
    state.stall = None
    installed, partial = snapshot(small)
    errors = [l for l in err.splitlines() if l.startswith("error:")]
    check("the disk fills during the download: exit 1, one error line, nothing installed",
          proc.returncode == 1 and len(errors) == 1 and not installed, f"exit {proc.returncode}: {err.strip()[-300:]!r} {installed}")
    if errors:
        print("     " + errors[0][:220])
    os.unlink(os.path.join(small, "filler"))
    r = run(["download", "free", "--server", env["HOSTILE"], *sdev, "--json"], env)
    check("with room again, the same download resumes and installs", r.returncode == 0 and '"resumed_from"' in r.stdout, r.stderr[-300:])
    server.shutdown()
    return small



@pytest.fixture(scope="module")
def outcomes(tilepack, tmp_path_factory):
    work = str(tmp_path_factory.mktemp("packs-attack"))
    check = Outcomes()
    mounted = check.play(scenario, work)
    if mounted:
        subprocess.run(["umount", mounted], capture_output=True)
    return check


@pytest.mark.parametrize("finding", FINDINGS)
def test_packs_attack(outcomes, finding):
    outcomes.check(finding)
