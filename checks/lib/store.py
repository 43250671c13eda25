"""The sample region store as a publisher and a device would set it up (the region-store checks:
test_regions_e2e, test_regions_attack, test_revocation_check, test_viewer_check,
test_edge_mask_check, the pack checks), in a work directory of the caller's:

- The two Mont Blanc archives are built once per tilepack binary (PNG tiles up to zoom 13, the
  zooms the checks look at) into .build/sample-store/ and copied into WORK/lib. Under a lock
  (.build/sample-store.lock): two lanes may find the cache stale at once; the second waits and
  then finds it built.
- The publisher: a key of its own (WORK/publisher, outside the library) signs the sample catalog
  into WORK/lib/catalog.jws (archive hashes filled in).
- The test App Store lives in WORK/xdg/tilepack/simulator (Apple's side); the device's trust
  file (WORK/trust.json) pins its root, the bundle id and the publisher's public key."""
import fcntl
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field

from checks.lib.common import ROOT, SAMPLE_REGIONS, tilepack_bin

SAMPLES = ("montblanc-dem", "montblanc-color")


def _binary_id(binary):
    h = hashlib.sha256()
    with open(binary, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def sample_archives(binary=None):
    """Builds (once per binary) the sample archives; returns the cache directory."""
    binary = binary or tilepack_bin()
    cache = os.path.join(ROOT, ".build", "sample-store")
    os.makedirs(os.path.join(ROOT, ".build"), exist_ok=True)
    with open(cache + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = os.path.join(cache, "built-with")
        want = _binary_id(binary)
        try:
            have = open(stamp).read().strip()
        except OSError:
            have = None
        if have != want:
            shutil.rmtree(cache, ignore_errors=True)
            os.makedirs(cache)
            for sample in SAMPLES:
                p = subprocess.run([binary, "build", os.path.join(SAMPLE_REGIONS, sample + ".tif"), "-o",
                                    os.path.join(cache, sample + ".mbtiles"), "--codec", "png", "--max-zoom", "13",
                                    "--progress", "none"], capture_output=True, text=True, timeout=1200)
                if p.returncode != 0:
                    raise RuntimeError(f"building the sample archive {sample} failed: {p.stderr[-2000:]}")
            with open(stamp, "w") as f:
                f.write(want + "\n")
    return cache


@dataclass
class SampleStore:
    """A store library set up in `work`: lib, trust, pub (the publisher's key directory), sim (the
    test App Store), ledger, and env (os.environ with XDG_DATA_HOME and XDG_CONFIG_HOME in work,
    TRUST and SIM set, for every process the check starts)."""
    work: str
    lib: str
    trust: str
    pub: str
    sim: str
    ledger: str
    env: dict = field(repr=False)

    def opts(self):
        """--library LIB --trust TRUST."""
        return ["--library", self.lib, "--trust", self.trust]


def sample_store(work, binary=None):
    """Sets up the sample store in `work` (created if missing) and returns it."""
    binary = binary or tilepack_bin()
    lib, trust, pub = os.path.join(work, "lib"), os.path.join(work, "trust.json"), os.path.join(work, "publisher")
    xdg_data, xdg_config = os.path.join(work, "xdg"), os.path.join(work, "config")
    sim = os.path.join(xdg_data, "tilepack", "simulator")
    ledger = os.path.join(xdg_data, "tilepack", "ledger.sqlite")
    for d in (lib, pub, xdg_data, xdg_config):
        os.makedirs(d, exist_ok=True)
    env = dict(os.environ, XDG_DATA_HOME=xdg_data, XDG_CONFIG_HOME=xdg_config, TRUST=trust, SIM=sim)
    cache = sample_archives(binary)
    for sample in SAMPLES:
        shutil.copy(os.path.join(cache, sample + ".mbtiles"), lib)
    shutil.copy(os.path.join(SAMPLE_REGIONS, "catalog.json"), lib)

    def tp(*args, stdout=None):
        p = subprocess.run([binary] + list(args), env=env, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"setting up the sample store: tilepack {' '.join(args)} failed: {p.stderr[-2000:]}")
        if stdout:
            with open(stdout, "w") as f:
                f.write(p.stdout)
        return p

    tp("catalog", "keygen", "-o", os.path.join(pub, "publisher.jwk"), stdout=os.path.join(pub, "publisher.public.jwk"))
    tp("catalog", "sign", os.path.join(lib, "catalog.json"), "--key", os.path.join(pub, "publisher.jwk"))
    tp("store", "trust", "--simulator", sim, "--publisher", os.path.join(pub, "publisher.public.jwk"),
       "--bundle-id", "com.tilepack.samples", "-o", trust)
    return SampleStore(work, lib, trust, pub, sim, ledger, env)
