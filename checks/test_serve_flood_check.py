"""`tilepack serve` bounded under any client (issue 27, Must-shows 1 and 2), on loopback.

Starts `serve --budget 64MiB` over the two Mont Blanc samples (an open library, PNG tiles to
zoom 13, built once per binary by checks/lib/store.py) with a raised descriptor limit
a short --idle-timeout 3 (every other limit at its default: --header-timeout 10 s), then:
  1. idle RSS: 100 tile requests, 10 s idle, VmRSS;
  2. flood: 8,000 connections (ulimit -n raised with setrlimit for this client and the server)
     each sending 12 KiB of unfinished headers, held open: the server's VmRSS, polled, stays
     under budget + 64 MiB; the connections over --max-connections are closed at once; the
     server spends no busy CPU while they hang;
  3. the header timeout closes every held connection (408), and after the clients close,
     VmRSS falls to idle + 16 MiB within 10 s;
  4. headers over 16 KiB get 431; a kept-alive idle connection is closed by the idle timeout;
  5. a request with `Host: evil.example` gets 421; a foreign Origin gets no CORS grant;
  6. descriptors run out (a server started with ulimit -n 256 and --max-connections 1000, 400
     clients): accept backs off instead of spinning a core.
BIN overrides the binary (default .build/debug/tilepack); FLOOD_ARGS adds serve options (e.g.
"--max-connections 8000"), FLOOD_CONNECTIONS the flood's size. With FLOOD_OLD=1 the new options are
left out, so a binary from before issue 27 can be measured (its checks then fail, figures print).
Marked `alone`: it weighs and times the server, so .ci/run runs it after the lanes, by itself.

    python3 -m pytest -s checks/test_serve_flood_check.py
"""
import os
import random
import resource
import socket
import sqlite3
import threading
import time
import urllib.error
import urllib.request

import pytest

from checks.lib.common import Outcomes, Serve, http_get
from checks.lib.store import sample_archives

pytestmark = [pytest.mark.alone, pytest.mark.slow]

OLD = os.environ.get("FLOOD_OLD") == "1"
FLOOD = int(os.environ.get("FLOOD_CONNECTIONS", "8000"))
MiB = 1 << 20
BUDGET = 64 * MiB
BIN = None  # the binary, set by the fixture

FINDINGS = [
    "100 tile requests answered",
    "serve's VmRSS during the flood stays under budget + 64 MiB",
    "no busy loop while the flood hangs",
    "every flood connection is closed by the server within header timeout + 6 s",
    "VmRSS falls back to idle + 16 MiB within 10 s of the clients closing",
    "78 KB of headers get 431 and the connection closes",
    "an idle kept-alive connection is closed by the idle timeout",
    "a request with Host: evil.example is refused (421)",
    "a foreign Origin gets no CORS grant",
    "with descriptors exhausted the server does not spin",
    "and serves again once descriptors are free",
]


def raise_nofile(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(want, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server(Serve):
    """serve --budget 64MiB over WORK/lib (an open library), its VmRSS at hand."""

    def __init__(self, work, args, nofile=None, name="serve"):
        home = os.path.join(work, "home")
        os.makedirs(home, exist_ok=True)
        super().__init__(["--library", os.path.join(work, "lib"), "--budget", "64MiB", "--log-level", "warning"] + args,
                         binary=BIN, env=dict(os.environ, XDG_CONFIG_HOME=home, HOME=home),
                         stdout=os.path.join(work, name + ".out"), stderr=os.path.join(work, name + ".err"), nofile=nofile)

    def rss(self):
        return status_kib(self.proc.pid, "VmRSS")


class RSSPoller(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.running = pid, 0, True

    def run(self):
        while self.running:
            v = status_kib(self.pid, "VmRSS")
            if v:
                self.peak = max(self.peak, v)
            time.sleep(0.05)


def http(port, path, headers=None, timeout=10):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def closed_by_peer(sock, wait):
    """Reads until EOF or `wait` seconds: (EOF seen, bytes read)."""
    if wait > 0:
        sock.settimeout(wait)
    else:
        sock.setblocking(False)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return True, data
            data += chunk
    except (socket.timeout, BlockingIOError):
        return False, data
    except (ConnectionResetError, BrokenPipeError):
        return True, data


def scenario(check, work, servers):
    nofile = raise_nofile(FLOOD + 2000)
    print(f"client and server RLIMIT_NOFILE: {nofile}", flush=True)
    cache = sample_archives(BIN)
    os.makedirs(os.path.join(work, "lib"))
    paths = []
    for region in ("montblanc-dem", "montblanc-color"):
        os.symlink(os.path.join(cache, region + ".mbtiles"), os.path.join(work, "lib", region + ".mbtiles"))
        db = sqlite3.connect(f"file:{cache}/{region}.mbtiles?mode=ro", uri=True)
        for z, x, tms in db.execute("SELECT zoom_level, tile_column, tile_row FROM tiles"):
            paths.append(f"/tiles/{region}/{z}/{x}/{(1 << z) - 1 - tms}.png")
        db.close()
    random.Random(27).shuffle(paths)

    # The default header timeout (10 s) outlasts opening the flood (~7 s on the debug binary).
    new_opts = ([] if OLD else ["--idle-timeout", "3"]) + os.environ.get("FLOOD_ARGS", "").split()
    server = Server(work, new_opts, nofile=nofile)
    servers.append(server)
    port, pid = server.port, server.proc.pid

    # 1. Idle RSS after 100 tile requests and 10 s idle.
    statuses = [http(port, paths[i % len(paths)])[0] for i in range(100)]
    check("100 tile requests answered", all(s == 200 for s in statuses), f"{statuses.count(200)} × 200")
    time.sleep(10)
    idle = server.rss()
    print(f"idle VmRSS after 100 tiles and 10 s: {idle / 1024:.1f} MiB", flush=True)

    # 2. The flood: 12 KiB of unfinished headers on each connection, held open.
    poller = RSSPoller(pid)
    poller.start()
    fill = b"GET /tiles/montblanc-dem/10/531/364.png HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Fill: " + b"a" * (12 << 10)
    socks, failed = [], 0
    t0 = time.monotonic()
    for _ in range(FLOOD):
        s = socket.socket()
        s.settimeout(5)
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(fill)
        except OSError:
            failed += 1
        socks.append(s)
    sent = time.monotonic() - t0
    print(f"{FLOOD} connections opened and sent in {sent:.1f} s ({failed} failed on the client)", flush=True)
    cpu0 = cpu_seconds(pid)
    time.sleep(1.5)
    cpu1 = cpu_seconds(pid)
    held = 0
    for s in socks:
        s.setblocking(False)
        try:
            held += 0 if s.recv(1, socket.MSG_PEEK) == b"" else 1
        except BlockingIOError:
            held += 1
        except OSError:
            pass
    during = poller.peak
    limit = (BUDGET + 64 * MiB) // 1024
    check("serve's VmRSS during the flood stays under budget + 64 MiB", during <= limit,
          f"peak {during / 1024:.1f} MiB, limit {limit / 1024:.0f} MiB; {held} connections held, {FLOOD - held} closed on accept")
    check("no busy loop while the flood hangs", cpu1 - cpu0 < 0.5, f"{cpu1 - cpu0:.2f} s of CPU in 1.5 s")

    # 3. The header timeout answers 408 and closes every held connection.
    deadline = time.monotonic() + 10 + 6
    eof, got408 = 0, 0
    for s in socks:
        done, data = closed_by_peer(s, deadline - time.monotonic())
        eof += done
        got408 += data.startswith(b"HTTP/1.1 408")
    check("every flood connection is closed by the server within header timeout + 6 s", eof == FLOOD,
          f"{eof} of {FLOOD} closed; {got408} got 408")
    for s in socks:
        s.close()
    t_close = time.monotonic()
    after = None
    while time.monotonic() - t_close < 10:
        after = server.rss()
        if after <= idle + 16 * 1024:
            break
        time.sleep(0.25)
    back = time.monotonic() - t_close
    poller.running = False
    check("VmRSS falls back to idle + 16 MiB within 10 s of the clients closing", after <= idle + 16 * 1024,
          f"{after / 1024:.1f} MiB after {back:.1f} s (idle {idle / 1024:.1f} MiB)")
    hwm = status_kib(pid, "VmHWM")
    print(f"VmHWM {hwm / 1024:.1f} MiB", flush=True)

    # 4. 431, and a kept-alive connection closed by the idle timeout.
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /regions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Fill: " + b"a" * 78000 + b"\r\n\r\n")
    done, data = closed_by_peer(s, 5)
    s.close()
    check("78 KB of headers get 431 and the connection closes", done and data.startswith(b"HTTP/1.1 431"), data[:40])
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET /regions HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    t_idle = time.monotonic()
    done, data = closed_by_peer(s, 3 + 4)
    s.close()
    check("an idle kept-alive connection is closed by the idle timeout", done and data.startswith(b"HTTP/1.1 200"),
          f"closed after {time.monotonic() - t_idle:.1f} s" if done else "still open")

    # 5. Foreign Host and foreign Origin.
    status, _, _ = http_get(port, "/regions", {"Host": "evil.example"}, timeout=20)
    check("a request with Host: evil.example is refused (421)", status == 421, status)
    status, headers, _ = http_get(port, paths[0], {"Origin": "http://evil.example"}, timeout=20)
    check("a foreign Origin gets no CORS grant", status == 200 and "access-control-allow-origin" not in headers,
          f"{status} {headers}")
    server.stop()

    # 6. Descriptors run out: accept must back off, not spin.
    small = Server(work, ([] if OLD else ["--max-connections", "1000", "--header-timeout", "30", "--idle-timeout", "30"]),
                   nofile=256, name="serve-emfile")
    servers.append(small)
    extra = []
    for _ in range(400):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", small.port))
        except OSError:
            pass
        extra.append(s)
    time.sleep(1)
    c0 = cpu_seconds(small.proc.pid)
    time.sleep(3)
    c1 = cpu_seconds(small.proc.pid)
    check("with descriptors exhausted the server does not spin", c1 - c0 < 0.6, f"{c1 - c0:.2f} s of CPU in 3 s")
    for s in extra:
        s.close()
    time.sleep(1.5)
    status = http(small.port, "/regions")[0]
    check("and serves again once descriptors are free", status == 200, status)


@pytest.fixture(scope="module")
def outcomes(tilepack, tmp_path_factory):
    global BIN
    BIN = tilepack
    work = str(tmp_path_factory.mktemp("serve-flood"))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    check, servers = Outcomes(), []
    try:
        check.play(scenario, work, servers)
    finally:
        for s in servers:
            s.stop()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return check


@pytest.mark.parametrize("finding", FINDINGS)
def test_serve_flood(outcomes, finding):
    outcomes.check(finding)
