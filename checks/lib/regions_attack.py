"""The attack cases of checks/test_regions_attack.py (which sets up the store library in
WORK/device and calls scenario()). See that module's docstring."""
import base64, datetime, threading, hashlib, http.client, json, math, os, random, shutil, signal, sqlite3, stat, subprocess, tempfile, time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID, ObjectIdentifier

T = WORK = DEVICE = PUB_DIR = None   # set by scenario()
check = None                         # the Outcomes the findings go to, set by scenario()
P = "com.tilepack.samples.montblanc."
CHAMONIX, COURMAYEUR, BUNDLE, UPDATES = P + "chamonix", P + "courmayeur", P + "bundle", P + "updates"
REGIONS = ["montblanc-dem", "montblanc-color"]
LEAF_OID, INTERMEDIATE_OID = "1.2.840.113635.100.6.11.1", "1.2.840.113635.100.6.2.1"

# -- States: a device is a directory holding lib/, xdg/ (ledger, simulator), config/, trust.json

def paths(state):
    return {
        "lib": os.path.join(state, "lib"), "trust": os.path.join(state, "trust.json"),
        "sim": os.path.join(state, "xdg/tilepack/simulator"), "ledger": os.path.join(state, "xdg/tilepack/ledger.sqlite"),
    }


def env_for(state):
    env = dict(os.environ)
    env.update(XDG_DATA_HOME=os.path.join(state, "xdg"), XDG_CONFIG_HOME=os.path.join(state, "config"), HOME=state)
    return env


copies = 0


def copy_state(src, name):
    """A copy of a device; archives hard-linked (no case edits them)."""
    global copies
    copies += 1
    dst = os.path.join(WORK, f"{copies:02d}-{name}")
    shutil.copytree(src, dst, copy_function=lambda s, d: os.link(s, d) if s.endswith(".mbtiles") else shutil.copy2(s, d),
                    symlinks=True)
    return dst


def tp(state, *args, faketime=None, user=None, timeout=120, check_rc=None):
    """Runs tilepack for `state` (--library and --trust given explicitly); returns (rc, stdout, stderr)."""
    p = paths(state)
    argv = [T, *args]
    if args and args[0] in ("query", "render", "serve", "store"):
        argv += ["--library", p["lib"], "--trust", p["trust"]]
    if faketime:
        argv = ["faketime", faketime, *argv]
    if user:
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    try:
        r = subprocess.run(argv, env=env_for(state), capture_output=True, timeout=timeout, cwd=state)
    except subprocess.TimeoutExpired:
        return (-999, b"", b"timed out")
    return (r.returncode, r.stdout, r.stderr)


def faketime_at(seconds):
    """faketime's absolute start time (the clock then ticks from there)."""
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


# -- What a device shows: every route of serve, query and render over both polygons, z11–13

def tile_of(lon, lat, z):
    n = 2 ** z
    x = int((lon + 180) / 360 * n)
    y = int((1 - math.log(math.tan(math.radians(lat)) + 1 / math.cos(math.radians(lat))) / math.pi) / 2 * n)
    return x, y


TILES = []


def tiles_over_the_polygons():
    """Every tile at z11–13 over the bounding box of the catalog's areas."""
    catalog = json.load(open(os.path.join(DEVICE, "lib/catalog.json")))
    lons = [pt[0] for p_ in catalog["products"] if "area" in p_ for ring in p_["area"] for pt in ring]
    lats = [pt[1] for p_ in catalog["products"] if "area" in p_ for ring in p_["area"] for pt in ring]
    tiles = []
    for z in (11, 12, 13):
        x0, y0 = tile_of(min(lons), max(lats), z)
        x1, y1 = tile_of(max(lons), min(lats), z)
        tiles += [(z, x, y) for x in range(x0, x1 + 1) for y in range(y0, y1 + 1)]
    return tiles
POINTS = [(45.92, 6.80), (45.95, 6.95), (45.79, 6.97), (45.76, 6.80)]   # two Chamonix, two Courmayeur
QUERIES = [(lat, lon, z) for lat, lon in (POINTS[0], POINTS[2]) for z in (11, 13)]   # the CLI, one process each
RENDER = [(12,) + tile_of(6.87, 45.92, 12), (12,) + tile_of(6.97, 45.79, 12), (13,) + tile_of(6.93, 45.87, 13)]


def sha(b, state=None):
    """A body's digest; with `state`, its directory in the text (archive paths) counts as one name."""
    if state:
        b = b.replace(state.encode(), b"STATE")
    return hashlib.sha256(b).hexdigest()[:16]


def observe(state, faketime=None, user=None):
    """What the device shows: {route: status[:sha]} for every serve route, query and render."""
    seen = {}
    p = paths(state)
    argv = [T, "serve", "--library", p["lib"], "--trust", p["trust"], "--port", "0", "--log-level", "error"]
    if faketime:
        argv = ["faketime", faketime, *argv]
    if user:
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    # Its own process group: faketime (and setpriv) run serve as a child, and a signal to the
    # wrapper alone would leave serve running after the check. Its stderr goes to a file: a
    # crash report (Swift's backtracer writes one, tens of KiB) must neither fill a pipe nobody
    # reads nor be lost.
    errors = tempfile.TemporaryFile()
    server = subprocess.Popen(argv, env=env_for(state), stdout=subprocess.PIPE, stderr=errors, cwd=state,
                              start_new_session=True)
    started, failures = time.monotonic(), []
    try:
        line = server.stdout.readline().decode()
        port = line.split("http://127.0.0.1:")[1].split("/")[0] if "http://127.0.0.1:" in line else None
        if not port:
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
            seen["serve"] = f"did not start (first line {line[:200]!r}): " + stderr_text(errors)[:400]
        else:
            requests = []
            for i, (z, x, y) in enumerate(TILES):
                # Every tile's stored and PNG routes; the routes that draw or re-encode per
                # request (terrain, the composited view: slow in a debug build) at every tile
                # to z12 and every third one at z13.
                drawn = z < 13 or i % 3 == 0
                for region in REGIONS:
                    requests += [f"/tiles/{region}/{z}/{x}/{y}.png", f"/tiles/{region}/{z}/{x}/{y}"]
                    if drawn:
                        requests.append(f"/terrain/{region}/{z}/{x}/{y}.png")
                if drawn:
                    requests.append(f"/view/{z}/{x}/{y}.png")
            requests += [f"/query?lat={lat}&lon={lon}&zoom={z}" for lat, lon in POINTS for z in (11, 12, 13)]
            def fetch(paths_):
                conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=60)
                for n, path in enumerate(paths_):
                    try:
                        conn.request("GET", path)
                        r = conn.getresponse()
                        body = r.read()
                    except OSError as e:
                        # No retry: a connection the server drops is a finding (serve keeps a
                        # kept-alive connection 60 s idle, far longer than any gap here).
                        failures.append(f"{path} (request {n + 1} on its connection, "
                                        f"{time.monotonic() - started:.1f} s after start): {e!r}")
                        break
                    seen[path] = f"{r.status}:{sha(body, state)}" if r.status == 200 else str(r.status)
                conn.close()
            # Two clients, as the machine has two cores: the server answers both at once.
            workers = [threading.Thread(target=fetch, args=(requests[i::2],)) for i in range(2)]
            for w in workers: w.start()
            for w in workers: w.join()
            if failures or server.poll() is not None:
                try:   # a crashing server's report takes seconds to write (symbolication)
                    status = server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    status = None
                fate = "still running" if status is None else f"exited with status {status}" + (
                    f" ({signal.Signals(-status).name})" if status < 0 else "")
                seen["serve"] = (f"the server dropped connections: {'; '.join(failures) or 'none'}; "
                                 f"the server {fate} before it was stopped; stderr: {crash_report(errors)}")
    finally:
        try:
            os.killpg(server.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass   # it died by itself (and was reaped above)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(server.pid, signal.SIGKILL)  # whatever of the group is left
        except ProcessLookupError:
            pass
        server.wait()
        errors.close()
    for lat, lon, z in QUERIES:
        rc, out, _ = tp(state, "query", str(lat), str(lon), str(z), faketime=faketime, user=user)
        seen[f"query {lat},{lon} z{z}"] = f"{rc}:{sha(out, state)}"
    for z, x, y in RENDER:
        out = os.path.join("/tmp" if user else state, f"render-{os.getpid()}-{z}-{x}-{y}.png")
        rc, _, err = tp(state, "render", "--tile", f"{z}/{x}/{y}", "-o", out, faketime=faketime, user=user)
        picture = open(out, "rb").read() if os.path.exists(out) else b""
        if os.path.exists(out):
            os.unlink(out)
        seen[f"render {z}/{x}/{y}"] = f"{rc}:{sha(picture)}"
    return seen


def stderr_text(f):
    f.flush()
    f.seek(0)
    return f.read().decode(errors="replace")


def crash_report(f):
    """The server's stderr: from Swift's crash report ("*** Program crashed") its first 40
    lines (the crashed thread), else its last 1,000 characters."""
    text = stderr_text(f)
    at = text.find("*** Program crashed")
    return "\n".join(text[at:].splitlines()[:40]) if at >= 0 else text[-1000:] or "(empty)"


def served(seen):
    return {k for k, v in seen.items() if v.startswith("200") or v.startswith("0:")}


def same(name, seen, expected):
    diff = sorted(k for k in set(seen) | set(expected) if seen.get(k) != expected.get(k))
    extra = served(seen) - served(expected)
    detail = f"; {len(diff)} answers differ (e.g. {diff[:3]} → {[seen.get(k) for k in diff[:3]]}), {len(extra)} shown beyond what was bought" if diff else ""
    for label, answers in (("serve", seen), ("serve in the expected state", expected)):
        if "serve" in answers:
            detail += f"; {label}: {answers['serve']}"
    check(name, not diff, f"shows exactly the expected state ({len(served(seen))} answers open){detail}")


# -- Minting: App Store-format tokens signed by keys the attacker has

def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def make_chain(root_key):
    def name(cn):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "tilepack Test App Store")])
    start, end = datetime.datetime(2020, 1, 1), datetime.datetime(2049, 12, 31)
    ik, lk = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    def cert(subject, issuer, public, key, ca, oid):
        b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public)
             .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if oid:
            b = b.add_extension(x509.UnrecognizedExtension(ObjectIdentifier(oid), b"\x05\x00"), critical=False)
        return b.sign(key, hashes.SHA256())
    root = cert(name("tilepack Test App Store Root CA"), name("tilepack Test App Store Root CA"), root_key.public_key(), root_key, True, None)
    inter = cert(name("tilepack Test App Store Intermediate CA"), root.subject, ik.public_key(), root_key, True, INTERMEDIATE_OID)
    leaf = cert(name("tilepack Test App Store Signing"), inter.subject, lk.public_key(), ik, False, LEAF_OID)
    return lk, ik, [leaf, inter, root]


def es256_jws(payload, leaf_key, chain):
    header = {"alg": "ES256", "typ": "JWT", "x5c": [base64.b64encode(c.public_bytes(serialization.Encoding.DER)).decode() for c in chain]}
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(payload, sort_keys=True).encode())
    r, s = decode_dss_signature(leaf_key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    return signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def ledger_account(state):
    return sqlite3.connect(paths(state)["ledger"]).execute("select value from meta where key='account'").fetchone()[0]


def insert_row(state, jws, payload):
    db = sqlite3.connect(paths(state)["ledger"])
    db.execute("insert or replace into transactions values (?,?,?,?,?,?,?,?,?,?)",
               (payload["transactionId"], payload["originalTransactionId"], payload["productId"], payload["appAccountToken"],
                payload["type"], payload["purchaseDate"], payload.get("expiresDate"), payload.get("revocationDate"),
                payload["signedDate"], jws))
    db.commit()


def minted_payload(state, product, tid):
    now = int(time.time() * 1000)
    return {"transactionId": tid, "originalTransactionId": tid, "productId": product, "bundleId": "com.tilepack.samples",
            "purchaseDate": now, "originalPurchaseDate": now, "signedDate": now, "type": "Non-Consumable", "quantity": 1,
            "appAccountToken": ledger_account(state), "environment": "Sandbox", "inAppOwnershipType": "PURCHASED"}


def try_key(path):
    """A private key in `path` (PEM, or a JWK with d), or None."""
    try:
        data = open(path, "rb").read(1 << 20)
    except OSError:
        return None
    try:
        return serialization.load_pem_private_key(data, password=None)
    except Exception:
        pass
    try:
        jwk = json.loads(data)
        if isinstance(jwk, dict) and "d" in jwk and jwk.get("crv") == "Ed25519":
            return ed25519.Ed25519PrivateKey.from_private_bytes(base64.urlsafe_b64decode(jwk["d"] + "=="))
    except Exception:
        pass
    return None


def files_under(*dirs):
    for d in dirs:
        for top, _, names in os.walk(d):
            for n in names:
                yield os.path.join(top, n)


def tree_digest(d):
    out = {}
    for f in files_under(d):
        if not os.path.islink(f):
            out[os.path.relpath(f, d)] = sha(open(f, "rb").read())
    return out


def store_rows(state, where="1"):
    db = sqlite3.connect(paths(state)["sim"] + "/store.sqlite")
    return db.execute(f"select count(*) from transactions where {where}").fetchone()[0]


_observe = observe


def observe(state, **kw):
    t = time.time()
    seen = _observe(state, **kw)
    print(f"  (observed {os.path.basename(state)} in {time.time() - t:.1f} s)", flush=True)
    return seen


# ---------------------------------------------------------------------------------------------

def scenario(outcomes, binary, work, pub):
    """Plays every case in order on copies of WORK/device (the store set up, nothing bought)."""
    global T, WORK, DEVICE, PUB_DIR, check, TILES, copies
    T, WORK, DEVICE, PUB_DIR, check, copies = binary, work, os.path.join(work, "device"), pub, outcomes, 0
    TILES = tiles_over_the_polygons()
    t_start = time.time()

    fresh = copy_state(DEVICE, "fresh")
    nothing = observe(fresh)
    rc, _, err = tp(DEVICE, "store", "buy", CHAMONIX)
    check("the legitimate purchase of the Chamonix region", rc == 0, err.decode(errors="replace")[-200:])
    legit = copy_state(DEVICE, "legit")
    owned = observe(legit)
    check("owning Chamonix opens more than owning nothing", served(owned) > served(nothing), f"{len(served(owned))} answers against {len(served(nothing))}")
    both_state = copy_state(legit, "both")
    tp(both_state, "store", "buy", COURMAYEUR)
    both = observe(both_state)
    print(f"baselines: nothing {len(served(nothing))}, Chamonix {len(served(owned))}, both {len(served(both))} open answers "
          f"of {len(owned)} ({time.time() - t_start:.0f} s)", flush=True)

    # 1. Minting with every file in the library and ledger directories, and with a CA of one's own.
    s = copy_state(legit, "mint")
    p = paths(s)
    # The simulator's directory sits beside the ledger by default, but it is Apple's side: its
    # private keys are not the device's files.
    keys = [(f, k) for f in files_under(p["lib"], os.path.dirname(p["ledger"]))
            if not f.startswith(p["sim"] + "/") and (k := try_key(f)) is not None]
    minted = 0
    for i, (f, key) in enumerate(keys + [("a CA of the attacker's own", ec.generate_private_key(ec.SECP256R1()))]):
        if isinstance(key, ec.EllipticCurvePrivateKey):
            leaf, _, chain = make_chain(key)
        else:
            leaf, _, chain = make_chain(ec.generate_private_key(ec.SECP256R1()))
        payload = minted_payload(s, BUNDLE, str(9_000_000_000_000_000 + i))
        insert_row(s, es256_jws(payload, leaf, chain), payload)
        minted += 1
    # The real chain in the header, the attacker's signature.
    real = sqlite3.connect(p["ledger"]).execute("select jws from transactions where product_id=?", (CHAMONIX,)).fetchone()[0]
    real_header = json.loads(base64.urlsafe_b64decode(real.split(".")[0] + "=="))
    leaf, _, _ = make_chain(ec.generate_private_key(ec.SECP256R1()))
    payload = minted_payload(s, COURMAYEUR, "9100000000000000")
    token = es256_jws(payload, leaf, [])
    token = b64url(json.dumps(real_header).encode()) + "." + token.split(".", 1)[1]
    insert_row(s, token, payload)
    print(f"minting: {len(keys)} key files among the library's and ledger's files; {minted + 1} tokens inserted", flush=True)
    same("minted transactions (attacker CAs with Apple's OIDs, the real x5c with a forged signature)", observe(s), owned)

    # 2. Swapping keys and certificates in the library, ledger and simulator directories.
    s = copy_state(legit, "swap")
    p = paths(s)
    root_key = ec.generate_private_key(ec.SECP256R1())
    leaf_key, inter_key, chain = make_chain(root_key)
    pem = lambda k: k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    der = lambda c: c.public_bytes(serialization.Encoding.DER)
    ca = os.path.join(p["sim"], "TestAppStoreCA")
    for name, data in [("root.der", der(chain[2])), ("intermediate.der", der(chain[1])), ("leaf.der", der(chain[0])),
                       ("root.key.pem", pem(root_key)), ("intermediate.key.pem", pem(inter_key)), ("leaf.key.pem", pem(leaf_key))]:
        with open(os.path.join(ca, name), "wb") as fh:
            fh.write(data)
        os.chmod(os.path.join(ca, name), 0o600 if name.endswith(".pem") else 0o644)
    open(os.path.join(p["sim"], "AppStoreRoot.der"), "wb").write(der(chain[2]))
    attacker_trust = json.load(open(p["trust"]))
    attacker_trust["app_store_roots"] = [base64.b64encode(der(chain[2])).decode()]
    for d in (p["lib"], os.path.dirname(p["ledger"])):
        json.dump(attacker_trust, open(os.path.join(d, "trust.json"), "w"))
        open(os.path.join(d, "AppStoreRoot.der"), "wb").write(der(chain[2]))
        open(os.path.join(d, "store-private.jwk"), "w").write(json.dumps({"kty": "OKP", "crv": "Ed25519", "x": "A" * 43, "d": "A" * 43}))
    same("keys and certificates swapped in the library, ledger and simulator directories", observe(s), owned)
    rc, _, err = tp(s, "store", "buy", COURMAYEUR)
    check("a purchase signed by the swapped-in CA is refused", rc != 0 and b"chain" in err, f"exit {rc}: {err.decode(errors='replace').strip()[:120]}")
    same("after the refused purchase", observe(s), owned)

    # 3. The catalog: deleted, edited, replaced (signed by another key, unsigned), looped, a FIFO.
    def catalog_case(label, mutate):
        s = copy_state(legit, "catalog-" + label.split()[0])
        mutate(paths(s)["lib"])
        same(f"catalog {label} (fails closed: free zooms of the accepted catalog only)", observe(s), nothing)

    def edit_payload(lib):
        h, pl, sg = open(os.path.join(lib, "catalog.jws")).read().strip().split(".")
        body = json.loads(base64.urlsafe_b64decode(pl + "=="))
        body["free_max_zoom"] = 24
        open(os.path.join(lib, "catalog.jws"), "w").write(h + "." + b64url(json.dumps(body).encode()) + "." + sg)

    def forged_catalog(lib, world=True):
        body = json.loads(open(os.path.join(lib, "catalog.json")).read())
        body["free_max_zoom"] = 24
        for prod in body["products"]:
            if "area" in prod:
                prod["area"] = [[[-179, -85], [179, -85], [179, 85], [-179, 85], [-179, -85]]]
        return body

    def sign_forged(lib, body):
        key = ed25519.Ed25519PrivateKey.generate()
        kid = json.load(open(os.path.join(PUB_DIR, "publisher.public.jwk")))["kid"]
        header = {"alg": "EdDSA", "kid": kid, "typ": "tilepack-catalog+jws"}
        si = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(body).encode())
        open(os.path.join(lib, "catalog.jws"), "w").write(si + "." + b64url(key.sign(si.encode())))

    catalog_case("deleted", lambda lib: os.unlink(os.path.join(lib, "catalog.jws")))
    catalog_case("edited (free_max_zoom 24 in the signed payload)", edit_payload)
    catalog_case("replaced by one signed with another key under the publisher's kid", lambda lib: sign_forged(lib, forged_catalog(lib)))
    def unsigned_only(lib):
        os.unlink(os.path.join(lib, "catalog.jws"))
        json.dump(forged_catalog(lib), open(os.path.join(lib, "catalog.json"), "w"))
    catalog_case("replaced by an unsigned catalog.json selling the world for free", unsigned_only)
    def loop(lib):
        os.unlink(os.path.join(lib, "catalog.jws"))
        os.symlink(os.path.join(lib, "catalog.jws"), os.path.join(lib, "catalog.jws"))
    catalog_case("looped (a symlink to itself)", loop)
    def fifo(lib):
        os.unlink(os.path.join(lib, "catalog.jws"))
        os.mkfifo(os.path.join(lib, "catalog.jws"))
    catalog_case("a FIFO (must not hang)", fifo)
    # An older edition signed by the real publisher: refused once a newer serial was accepted.
    newer = copy_state(legit, "catalog-newer")
    edition = json.load(open(os.path.join(paths(newer)["lib"], "catalog.json")))
    json.dump(dict(edition, serial=5), open(os.path.join(paths(newer)["lib"], "catalog.json"), "w"))
    subprocess.run([T, "catalog", "sign", os.path.join(paths(newer)["lib"], "catalog.json"), "--key", os.path.join(PUB_DIR, "publisher.jwk")],
                   capture_output=True, check=True)
    tp(newer, "store", "restore")   # a writable command: the device accepts serial 5
    shutil.copy(os.path.join(paths(legit)["lib"], "catalog.jws"), os.path.join(paths(newer)["lib"], "catalog.jws"))
    same("an older catalog edition (serial 1 after 5 was accepted) is refused", observe(newer), nothing)

    # 4. Another catalog reusing the subscription's id as a free region (another price and kind).
    s = copy_state(legit, "other-catalog")
    other = os.path.join(s, "other")
    os.makedirs(other)
    for name in os.listdir(paths(s)["lib"]):
        if name.endswith(".mbtiles"):
            os.link(os.path.join(paths(s)["lib"], name), os.path.join(other, name))
    body = json.load(open(os.path.join(paths(s)["lib"], "catalog.json")))
    body["products"] = [dict(id=UPDATES, title="free", price="0", currency="EUR", kind="region",
                             area=[[[6.5, 45.5], [7.2, 45.5], [7.2, 46.1], [6.5, 46.1], [6.5, 45.5]]], minzoom=9, maxzoom=15,
                             archives=["montblanc-dem.mbtiles", "montblanc-color.mbtiles"])]
    json.dump(body, open(os.path.join(other, "catalog.json"), "w"))
    argv = [T, "store", "buy", UPDATES, "--library", other, "--trust", paths(s)["trust"]]
    r1 = subprocess.run(argv, env=env_for(s), capture_output=True)
    sign_forged(other, body)
    r2 = subprocess.run(argv, env=env_for(s), capture_output=True)
    check("buying the subscription's id from another catalog (unsigned, forged) charges nothing",
          r1.returncode != 0 and r2.returncode != 0 and store_rows(s, f"product_id='{UPDATES}'") == 0,
          f"unsigned: exit {r1.returncode}; forged: exit {r2.returncode}")
    same("the real library after the other catalog's attempts", observe(s), owned)

    # 5. An old signed blob put back into a ledger row after a refund.
    s = copy_state(legit, "old-blob")
    p = paths(s)
    tp(s, "store", "buy", COURMAYEUR)
    db = sqlite3.connect(p["ledger"])
    before = db.execute("select * from transactions where product_id=?", (COURMAYEUR,)).fetchone()
    db.close()
    tp(s, "store", "refund", before[0])
    db = sqlite3.connect(p["ledger"])
    db.execute("delete from transactions where transaction_id=?", (before[0],))
    db.execute("insert into transactions values (?,?,?,?,?,?,?,?,?,?)", before)
    db.execute("delete from meta where key='observed_ms'")
    db.commit()
    db.close()
    same("the pre-refund signed blob restored into its row", observe(s), owned)

    # 6. The clock set back past a subscription's expiry (faketime), and 7. deleting the newest rows
    #    and the watermark.
    s = copy_state(legit, "clock")
    p = paths(s)
    now = time.time()
    rc, _, err = tp(s, "store", "buy", UPDATES, faketime=faketime_at(now - 730 * 86400))
    check("a yearly subscription bought two years ago (faketime)", rc == 0, f"exit {rc} {err.decode(errors='replace').strip()[:100]}")
    same("now, the subscription has expired", observe(s), owned)
    same("the clock set back to before its expiry", observe(s, faketime=faketime_at(now - 500 * 86400)), owned)
    db = sqlite3.connect(p["ledger"])
    newest = db.execute("select transaction_id from transactions order by signed_date desc limit 1").fetchone()[0]
    db.execute("delete from transactions where transaction_id=?", (newest,))
    db.execute("delete from meta where key in ('observed_ms')")
    db.commit()
    db.close()
    same("the newest row and the watermark deleted, the clock set back", observe(s, faketime=faketime_at(now - 500 * 86400)), owned)

    # 8. A double buy.
    s = copy_state(legit, "double")
    rows = store_rows(s)
    rc, out, _ = tp(s, "store", "buy", CHAMONIX)
    check("buying Chamonix again: already owned, nothing charged", rc == 0 and b"already owned" in out and store_rows(s) == rows,
          f"{store_rows(s) - rows} new store rows")
    same("after the double buy", observe(s), owned)

    # 9. SIGKILL during buy, 20 times, then restore.
    s = copy_state(legit, "killed")
    p = paths(s)
    rng = random.Random(23)
    for i in range(20):
        proc = subprocess.Popen([T, "store", "buy", COURMAYEUR, "--library", p["lib"], "--trust", p["trust"]],
                                env=env_for(s), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.05, 0.9))
        proc.kill()
        proc.wait()
    charged = store_rows(s, f"product_id='{COURMAYEUR}' and revoked=0")
    rc, _, _ = tp(s, "store", "restore")
    check("20 SIGKILLed buys then restore: charged at most once, nothing left unfinished",
          rc == 0 and charged <= 1 and store_rows(s, "finished=0") == 0, f"charged {charged} time(s)")
    print(f"     Courmayeur {'charged, so owned' if charged else 'never charged'}")
    same("after the killed buys and restore", observe(s), both if charged else owned)

    # 10. A read-only ledger and library: an unprivileged user, the WAL ledger without -wal/-shm.
    s = copy_state(legit, "readonly")
    p = paths(s)
    for f in os.listdir(os.path.dirname(p["ledger"])):
        if f.endswith("-wal") or f.endswith("-shm"):
            os.unlink(os.path.join(os.path.dirname(p["ledger"]), f))
    mode = sqlite3.connect(p["ledger"]).execute("pragma journal_mode").fetchone()[0]
    for top, dirs, names in os.walk(s):
        for n in dirs + names:
            f = os.path.join(top, n)
            if not os.path.islink(f):
                os.chmod(f, (os.stat(f).st_mode | stat.S_IRGRP | stat.S_IROTH | (stat.S_IXOTH | stat.S_IXGRP if os.path.isdir(f) else 0)) & ~(stat.S_IWGRP | stat.S_IWOTH))
    os.chmod(s, 0o755)
    digest = tree_digest(s)
    print(f"     the ledger's journal mode: {mode}")
    same("read-only ledger (no -wal/-shm) and library, as an unprivileged user", observe(s, user=True), owned)
    after = tree_digest(s)
    changed = sorted(k for k in set(after) | set(digest) if after.get(k) != digest.get(k))
    check("the read-only commands wrote nothing", not changed, f"changed: {changed[:5]}")

    print(f"regions-attack: {time.time() - t_start:.0f} s")
