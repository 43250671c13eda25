"""Shared by the pack checks (checks/test_packs_e2e.py, checks/test_packs_attack.py): a pausing
proxy in front of `tilepack serve`, a GeoTIFF tile rewriter, the sample store set up as a
publisher, a shop and a device would have it (checks/lib/store.py)."""
import hashlib, json, random, re, select, socket, struct, subprocess, threading, zlib

from checks.lib.common import ROOT, tilepack_bin  # noqa: F401  (ROOT re-exported)
from checks.lib.store import sample_store as _sample_store


def __getattr__(name):
    """`T`, the binary, resolved when first asked for (tilepack_bin())."""
    if name == "T":
        return tilepack_bin()
    raise AttributeError(name)
CHAMONIX = "com.tilepack.samples.montblanc.chamonix"
LICENSE = "CC0-1.0 (synthetic sample terrain)"
ATTRIBUTION = "tilepack sample terrain (synthetic)"


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run(args, env, timeout=600, **kw):
    return subprocess.run([tilepack_bin()] + args, env=env, capture_output=True, text=True, timeout=timeout, **kw)


def sample_store(work):
    """The sample store in `work` (checks/lib/store.py): returns (env, lib, trust, pub, sim)."""
    s = _sample_store(work)
    return s.env, s.lib, s.trust, s.pub, s.sim


def pack(env, lib, out, key, previous=None):
    args = ["pack", "--library", lib, "-o", out, "--key", key, "--license", LICENSE, "--attribution", ATTRIBUTION, "--json"]
    if previous:
        args += ["--previous", previous]
    r = run(args, env)
    return r, {json.loads(l)["manifest"]["pack_id"]: json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")}


def start_serve(env, library, packs, log):
    proc = subprocess.Popen([tilepack_bin(), "serve", "--library", library, "--packs", packs, "--port", "0",
                             "--trust", env["TRUST"], "--simulator", env["SIM"], "--log-level", "warning"],
                            env=env, stdout=subprocess.PIPE, stderr=open(log, "a"), text=True)
    line = proc.stdout.readline()
    m = re.search(r"http://[\d.]+:(\d+)/", line)
    if not m:
        proc.kill()
        raise RuntimeError(f"serve did not start: {line!r} (see {log})")
    return proc, int(m.group(1))


class PausingProxy:
    """A TCP proxy in front of `serve`. For a response to a pack request (`GET /packs/…`) it can
    stop forwarding once the body reaches an absolute offset of the pack (the request's
    `Range: bytes=N-` start plus the body bytes sent), holding the connection open, so the
    client is stalled mid-body and can be killed there; or flip one byte at an offset. Counts
    every byte it forwards from the server."""

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.forwarded = 0
        self.pause_at = None      # absolute pack offset at which to stall
        self.corrupt_at = None    # absolute pack offset of a byte to flip
        self.paused = threading.Event()
        self.resumed = threading.Event()
        threading.Thread(target=self.accept, daemon=True).start()

    def reset(self, pause_at=None, corrupt_at=None):
        with self.lock:
            self.forwarded = 0
            self.pause_at, self.corrupt_at = pause_at, corrupt_at
            self.paused.clear()
            self.resumed.clear()

    def resume(self):
        """Lets a stalled response go on (and no later one stall)."""
        with self.lock:
            self.pause_at = None
        self.resumed.set()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(client,), daemon=True).start()

    def serve(self, client):
        try:
            server = socket.create_connection(("127.0.0.1", self.upstream))
        except OSError:
            client.close()
            return
        state = {"range_start": 0, "is_pack": False}

        def upstream():  # client → server; notes the request line and Range of each request
            buf = b""
            try:
                while True:
                    data = client.recv(65536)
                    if not data:
                        break
                    buf += data
                    while b"\r\n\r\n" in buf:
                        head, buf = buf.split(b"\r\n\r\n", 1)
                        text = head.decode("latin-1")
                        first = text.split("\r\n", 1)[0]
                        state["is_pack"] = bool(re.match(r"GET /packs/[^ ]+", first))
                        m = re.search(r"(?im)^range:\s*bytes=(\d+)-", text)
                        state["range_start"] = int(m.group(1)) if m else 0
                    server.sendall(data)
            except OSError:
                pass
            finally:
                try:
                    server.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

        threading.Thread(target=upstream, daemon=True).start()
        in_body, body_sent, header = False, 0, b""
        try:
            while True:
                data = server.recv(16384)
                if not data:
                    break
                out = bytearray(data)
                if not in_body:
                    header += data
                    if b"\r\n\r\n" in header:
                        head_len = len(header) - len(data)
                        split = header.index(b"\r\n\r\n") + 4 - head_len
                        in_body, body_sent = True, -split  # bytes of `out` before the body
                limit = None
                with self.lock:
                    if in_body and state["is_pack"]:
                        start = state["range_start"] + body_sent
                        if self.corrupt_at is not None and start <= self.corrupt_at < start + len(out) and self.corrupt_at - start >= 0:
                            out[self.corrupt_at - start] ^= 0xFF
                        if self.pause_at is not None and start + len(out) > self.pause_at:
                            limit = max(0, self.pause_at - start)
                if limit is not None:
                    client.sendall(bytes(out[:limit]))
                    with self.lock:
                        self.forwarded += limit
                    body_sent += limit
                    out = out[limit:]
                    self.paused.set()
                    # Stall until resumed, or until the client goes away.
                    gone = False
                    while not self.resumed.wait(0.1):
                        readable, _, _ = select.select([client], [], [], 0)
                        if readable:
                            try:
                                gone = not client.recv(1, socket.MSG_PEEK)
                            except OSError:
                                gone = True
                            if gone:
                                break
                    if gone:
                        break
                client.sendall(bytes(out))
                with self.lock:
                    self.forwarded += len(out)
                if in_body:
                    body_sent += len(out)
        except OSError:
            pass
        finally:
            client.close()
            server.close()


def rewrite_block(src, dst, seed=7):
    """A copy of the tiled, deflated GeoTIFF `src` with one 256×256 tile replaced by new pixels
    (same georeferencing, same layout): the new tile is appended and its offset and byte count
    rewritten in place. Handles predictor 1 and 2, 8-bit samples."""
    data = bytearray(open(src, "rb").read())
    e = "<" if data[:2] == b"II" else ">"
    assert struct.unpack(e + "H", data[2:4])[0] == 42, "classic TIFF expected"
    ifd = struct.unpack(e + "I", data[4:8])[0]
    tags = {}
    for i in range(struct.unpack(e + "H", data[ifd:ifd + 2])[0]):
        tag, typ, count, value = struct.unpack(e + "HHII", data[ifd + 2 + i * 12:ifd + 14 + i * 12])
        tags[tag] = (typ, count, value, ifd + 2 + i * 12 + 8)
    width, height = tags[256][2], tags[257][2]
    tw, th = tags[322][2], tags[323][2]
    spp = tags[277][2] & 0xFFFF
    assert tags[259][2] & 0xFFFF == 8, "deflate expected"
    predictor = tags[317][2] & 0xFFFF if 317 in tags else 1
    offsets_at, counts_at = tags[324][2], tags[325][2]
    across = (width + tw - 1) // tw
    # The tile left of centre in the upper half: inside the Chamonix valley's polygon.
    col, row = max(0, across // 2 - 1), 0
    k = row * across + col
    rnd = random.Random(seed)
    rows = []
    for y in range(th):
        line = bytearray()
        for x in range(tw):
            v = (x * 3 + y * 5 + rnd.randrange(8)) & 0xFF
            line += bytes([v, 255 - v, (v * 7) & 0xFF][:spp]) + bytes(max(0, spp - 3))
        if predictor == 2:
            for i in range(len(line) - 1, spp - 1, -1):
                line[i] = (line[i] - line[i - spp]) & 0xFF
        rows.append(bytes(line))
    blob = zlib.compress(b"".join(rows), 6)
    new_offset = len(data)
    data += blob
    struct.pack_into(e + "I", data, offsets_at + 4 * k, new_offset)
    struct.pack_into(e + "I", data, counts_at + 4 * k, len(blob))
    open(dst, "wb").write(data)
    return col, row
