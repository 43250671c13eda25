"""What every check needs, one copy each: the tilepack binary ($BIN, else this checkout's debug
build, built once), the test data root (../shared/testdata) and SampleRegions, running a command
with a timeout, PSNR, a process's peak RSS (VmHWM from /proc), `tilepack serve` started on a free
port and stopped, and HTTP GETs against it."""
import http.client
import importlib
import math
import os
import re
import socket
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTDATA = os.path.join(os.path.dirname(ROOT), "shared", "testdata")
SAMPLE_REGIONS = os.path.join(ROOT, "SampleRegions")
MiB = 1 << 20

_binary = None


class SetupError(RuntimeError):
    """The environment a check needs is missing (no binary, no test data, a tool not installed)."""


def tilepack_bin():
    """The tilepack binary every check runs: $BIN when it is set (.ci/run sets it, so the checks
    never touch .build while the sanitizer steps rebuild it), otherwise this checkout's debug
    build, built once (`swift build --product tilepack`). Sets $BIN for the tools and child
    processes the checks start."""
    global _binary
    if _binary:
        return _binary
    binary = os.environ.get("BIN")
    if binary:
        if not os.access(binary, os.X_OK):
            raise SetupError(f"BIN={binary} is not an executable file")
    else:
        p = subprocess.run(["swift", "build", "--product", "tilepack"], cwd=ROOT, capture_output=True, text=True)
        if p.returncode != 0:
            raise SetupError((p.stdout + p.stderr)[-2000:] + "\nswift build --product tilepack failed")
        binary = os.path.join(ROOT, ".build", "debug", "tilepack")
    os.environ["BIN"] = binary
    _binary = binary
    return binary


def data_root():
    """The real test data root (../shared/testdata beside the checkout)."""
    if not os.path.isdir(TESTDATA):
        raise SetupError(f"the test data is missing: {TESTDATA} (../shared/testdata beside the checkout)")
    return TESTDATA


def require(*modules):
    """Raises SetupError naming what is missing when a Python module cannot be imported: the
    checks install nothing at run time; every tool they use is pinned in checks/requirements.txt."""
    missing = []
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError:
            missing.append(m)
    if missing:
        raise SetupError(f"{', '.join(missing)} missing: pip install -r checks/requirements.txt")


def run(args, timeout=600, check=True, **kw):
    """Runs a command with a timeout, capturing text output; raises with its stderr when it fails
    and `check` is set."""
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    p = subprocess.run([str(a) for a in args], timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))} exited {p.returncode}: {(p.stderr or '').strip()[-2000:]}")
    return p


def tilepack(args, timeout=600, check=True, **kw):
    """`tilepack ARGS` (the binary of tilepack_bin()) with a timeout."""
    return run([tilepack_bin()] + list(args), timeout=timeout, check=check, **kw)


def psnr(a, b, peak=255.0, mask=None):
    """Peak signal-to-noise ratio of two arrays in dB (inf when equal), over `mask` when given."""
    import numpy as np
    d = (np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)) ** 2
    if mask is not None:
        d = d[mask]
    mse = float(d.mean()) if d.size else float("nan")
    return float("inf") if mse == 0 else 10 * math.log10(peak * peak / mse)


def opaque_rgba(path):
    """A TIFF as an opaque RGBA8 array (height × width × 4): grey repeated into R, G and B, any
    alpha replaced by 255; the codec benchmarks' source images, as the encoders see them."""
    import numpy as np
    import tifffile
    a = tifffile.imread(path)
    if a.ndim == 2:
        a = np.dstack([a, a, a])
    return np.dstack([a[..., :3], np.full(a.shape[:2], 255, np.uint8)]).astype(np.uint8)


def mse(a, b):
    import numpy as np
    return float(np.mean((np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)) ** 2)) if np.size(a) else float("nan")


# ---------------------------------------------------------------- peak RSS from /proc

def hwm_kib(pid):
    """A process's peak RSS (VmHWM) in KiB, None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_kib(pid):
    """A process's current RSS (VmRSS) in KiB, None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def descendants(pid):
    """Every descendant of a process, through each of its threads' /proc/PID/task/TID/children
    (a child belongs to the thread that forked it). Reads a few files per process of the tree,
    not all of /proc: a sampler must not take the CPU of the builds it measures."""
    out, frontier = [], [pid]
    while frontier:
        nxt = []
        for q in frontier:
            try:
                tasks = os.listdir(f"/proc/{q}/task")
            except OSError:
                tasks = []
            for t in tasks:
                try:
                    with open(f"/proc/{q}/task/{t}/children") as f:
                        kids = [int(x) for x in f.read().split()]
                except OSError:
                    kids = []
                out += kids
                nxt += kids
        frontier = nxt
    return out


def is_tilepack(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip().startswith("tilepack")
    except OSError:
        return False


def run_measured(argv, timeout=120, limit_as=None):
    """Runs argv under `timeout` (and `prlimit --as` when limit_as is given), polling the VmHWM of
    the tilepack process beneath until it exits. Returns (exit status, stdout, stderr, peak MiB,
    seconds)."""
    argv = [str(a) for a in argv]
    if limit_as:
        argv = ["prlimit", f"--as={limit_as}", "--"] + argv
    argv = ["timeout", str(timeout)] + argv
    start = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    stop = threading.Event()

    def poll():
        nonlocal peak
        # timeout → (prlimit →) tilepack: measure the descendants that are tilepack.
        while not stop.is_set():
            for pid in descendants(p.pid):
                v = hwm_kib(pid)
                if v and is_tilepack(pid):
                    peak = max(peak, v)
            time.sleep(0.005)

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    out, err = p.communicate()
    stop.set()
    t.join()
    return p.returncode, out, err, peak / 1024, time.monotonic() - start


# ---------------------------------------------------------------- serve and HTTP

def free_port():
    """A TCP port free on 127.0.0.1 now (for a server that cannot be given --port 0)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    """`tilepack serve ARGS --port 0` (or --port PORT) in the background, its port read from the
    URL it prints; `pid` is the tilepack process (under `timeout` when a limit is given; `nofile`
    sets its descriptor limit). Use as a context manager, or call stop()."""

    def __init__(self, args, binary=None, env=None, port=0, limit=None, stdout=None, stderr=None,
                 startup=30, cwd=None, nofile=None):
        argv = [binary or tilepack_bin(), "serve"] + [str(a) for a in args] + ["--port", str(port)]
        if limit:
            argv = ["timeout", str(limit)] + argv
        self.stdout_path = stdout
        self.stderr_path = stderr
        out = open(stdout, "w+") if stdout else subprocess.PIPE
        err = open(stderr, "w+") if stderr else subprocess.DEVNULL
        def limits():  # the server's RLIMIT_NOFILE soft limit
            import resource
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

        self.proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env, text=True, cwd=cwd,
                                     preexec_fn=limits if nofile else None)
        self.port = None
        deadline = time.monotonic() + startup
        first = ""
        if stdout:
            while time.monotonic() < deadline and self.proc.poll() is None:
                with open(stdout) as f:
                    first = f.read()
                m = re.search(r"http://127\.0\.0\.1:(\d+)", first)
                if m:
                    self.port = int(m.group(1))
                    break
                time.sleep(0.05)
        else:
            first = self.proc.stdout.readline()
            m = re.search(r"http://[\d.]+:(\d+)", first)
            if m:
                self.port = int(m.group(1))
        if self.port is None:
            detail = first
            if stderr:
                with open(stderr) as f:
                    detail += f.read()[-2000:]
            self.stop()
            raise RuntimeError(f"serve did not start: {detail!r}")
        self.pid = self.proc.pid
        if limit:
            for pid in descendants(self.proc.pid):
                if is_tilepack(pid):
                    self.pid = pid

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def http_get(port, path, headers=None, timeout=30, method="GET"):
    """(status, headers as a dict with lower-case names, body) of one request to 127.0.0.1:port."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, headers=headers or {})
        r = c.getresponse()
        body = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, body
    finally:
        c.close()


# ---------------------------------------------------------------- scenarios

class Outcomes:
    """The findings of a scenario that a module-scoped fixture plays once, in order (each step
    works on the state the steps before it left), each asserted by a test of its own:
    `outcomes(key, ok, detail)` records one while playing (and returns ok, so a step can depend
    on it); a test calls `outcomes.check(key)`. A key never recorded fails its test saying where
    the scenario stopped; `skip(key, reason)` records a step that could not run here (a skip,
    never a pass)."""

    def __init__(self):
        self.items, self.skipped, self.stopped = {}, {}, None

    def __call__(self, key, ok, detail=""):
        ok = bool(ok)
        self.items[key] = (ok, detail)
        print(("ok   " if ok else "FAIL ") + key + (f" ({detail})" if detail else ""), flush=True)
        return ok

    def skip(self, key, reason):
        self.skipped[key] = reason
        print(f"SKIPPED {key}: {reason}", flush=True)

    def play(self, scenario, *args, **kw):
        """Runs scenario(self, *args, **kw); an exception stops it and is kept for the steps not reached."""
        import traceback
        try:
            return scenario(self, *args, **kw)
        except Exception as e:  # noqa: BLE001 - reported by every test not reached
            self.stopped = f"{type(e).__name__}: {e}\n" + "".join(traceback.format_exc(limit=-3))
            print(f"the scenario stopped: {self.stopped}", flush=True)
            return None

    def check(self, key):
        import pytest
        if key in self.skipped:
            pytest.skip(self.skipped[key])
        if key not in self.items:
            pytest.fail(f"not reached: the scenario stopped before it ({self.stopped or 'an earlier step failed'})",
                        pytrace=False)
        ok, detail = self.items[key]
        assert ok, f"{key}: {detail}"


def require_or_exit(*modules):
    """require() for a script (the benchmarks, the tools): exits (status 1) naming what is missing."""
    import sys
    try:
        require(*modules)
    except SetupError as e:
        sys.exit(str(e))
