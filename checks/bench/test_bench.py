"""The benchmarks: each script beside this file prints its figures (BENCHMARKS.md gives the
commands, arguments and results; most time a release binary, which they build or take from an
option or the environment, and some need the peers of checks/requirements.txt below "--- peers").
They are scripts first — run one as BENCHMARKS.md writes it, e.g. `checks/bench/serve-bench`.

`make bench` runs them all here through pytest (marker `bench`, output not captured), each
with its default arguments, and fails a benchmark that exits non-zero; `make bench BENCH=NAME`
runs the one(s) whose name contains NAME. Those that need arguments (astc-decode-bench and bench-packs:
binaries; app-closure-cost: revisions; seam-check: a source; bench-supercompression: archives) take them from BENCH_ARGS, else are skipped. Not
collected by `make checks` (checks/pytest.ini: norecursedirs).
"""
import os
import shlex
import subprocess

import pytest

from checks.lib.common import ROOT

HERE = os.path.dirname(os.path.abspath(__file__))
NEEDS_ARGS = {"astc-decode-bench": "old=PATH new=PATH", "app-closure-cost": "REV [REV…]",
              "seam-check": "SOURCE.tif [--codec C[:LEVEL] ...]", "bench-packs": "NAME=BINARY [NAME=BINARY ...]",
              "bench-supercompression": "ARCHIVE.mbtiles [...]"}
BENCHES = sorted(f for f in os.listdir(HERE)
                 if not f.startswith(("test_", "_", ".")) and os.path.isfile(os.path.join(HERE, f))
                 and os.access(os.path.join(HERE, f), os.X_OK))


@pytest.mark.bench
@pytest.mark.parametrize("name", BENCHES)
def test_bench(name, capsys):
    args = shlex.split(os.environ.get("BENCH_ARGS", ""))
    if name in NEEDS_ARGS and not args:
        pytest.skip(f"{name} needs arguments: BENCH_ARGS='{NEEDS_ARGS[name]}'")
    with capsys.disabled():
        print(f"\n== checks/bench/{name} {' '.join(args)}", flush=True)
        r = subprocess.run([os.path.join(HERE, name), *args], cwd=ROOT)
    assert r.returncode == 0, f"checks/bench/{name} exited {r.returncode}"
