"""Resume after a kill (issue 12, Must-show 3): builds killed with SIGKILL at random moments and
resumed must end with the uninterrupted build's archive.

    [RESUME_RUNS=N] python3 -m pytest -s checks/test_resume_check.py   (default 20 runs, one test each)

Source: `tilepack sample-region` (the synthetic Mont Blanc DEM, int16, --size 2048, and the RGB
image of the same ground, --size 1536), built with the default codec (ASTC 6x6 quality: lossy,
so the parents of a resumed build must come from the journal's exact pixels, not the archive).
Runs alternate between the DEM (hillshade + lossless metres) and the RGB image. Each run starts
`tilepack build`, sends SIGKILL at a uniformly random moment of the reference build's wall time
(a quarter of the runs are killed a second time while resuming), then runs the same command
with --resume and compares tiles, elevation rows and metadata with the uninterrupted build.
The binary is the checks' (BIN, else the debug build; the script this replaces built a release
one: BIN=.build/release/tilepack times it as BENCHMARKS.md does). Needs python3 (stdlib only).

Before each resume the killed build's temporary archive is read (read-only): the tiles and
finished roots (block roots and the tiles above them, with their exact pixels) it had
committed. The writer commits every 1000 tiles and at least once a second
(MBTilesWriter.Options.commitInterval), so most kills land after commits; the summary (-s) says
how many, and how many roots and tiles the resumed builds took from the journals.
"""
import os
import random
import re
import signal
import sqlite3
import subprocess
import time

import pytest

pytestmark = [pytest.mark.slow]

RUNS = int(os.environ.get("RESUME_RUNS", "20"))
OPTS = ["--quiet", "--workers", "2"]
rng = random.Random(12)  # one sequence over the runs, in order
stats = {"resumed": 0, "after_commit": 0, "roots": 0, "with_roots": 0, "runs": 0}


def committed(path):
    """(tiles, finished roots) committed in a killed build's temporary archive; read-only, so
    the resume still finds the WAL as the kill left it."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tiles = db.execute("select count(*) from map").fetchone()[0]
        roots = db.execute("select count(*) from tilepack_roots").fetchone()[0]
        db.close()
        return tiles, roots
    except sqlite3.Error:
        return 0, 0  # killed before its schema committed

def contents(path):
    db = sqlite3.connect(path)
    tiles = {(z, x, y): bytes(d) for z, x, y, d in db.execute("select zoom_level, tile_column, tile_row, tile_data from tiles")}
    elev = {(z, x, y): (e, w, h, bytes(d)) for z, x, y, e, w, h, d in
            db.execute("select zoom_level, tile_column, tile_row, encoding, width, height, data from elevation")}
    meta = dict(db.execute("select name, value from metadata"))
    tables = sorted(r[0] for r in db.execute("select name from sqlite_master where type = 'table'"))
    db.close()
    return tiles, elev, meta, tables

@pytest.fixture(scope="module")
def references(tilepack, tmp_path_factory):
    """The two sources and their uninterrupted builds: (WORK, SOURCES, refs, seconds)."""
    WORK = str(tmp_path_factory.mktemp("resume-check"))
    # The DEM at 2048 (zooms 9-14, 290 tiles, 7 blocks) and the colour image at 1536 (344 tiles):
    # enough blocks that a kill usually lands after some finished roots.
    subprocess.run([tilepack, "sample-region", "--out", WORK, "--size", "2048", "--only", "dem"], check=True, capture_output=True)
    subprocess.run([tilepack, "sample-region", "--out", WORK, "--size", "1536", "--only", "color"], check=True, capture_output=True)
    SOURCES = [os.path.join(WORK, "montblanc-dem.tif"), os.path.join(WORK, "montblanc-color.tif")]
    refs, seconds = {}, {}
    for src in SOURCES:
        out = os.path.join(WORK, os.path.basename(src) + ".ref.mbtiles")
        t0 = time.monotonic()
        subprocess.run([tilepack, "build", src, "-o", out, *OPTS], check=True, capture_output=True)
        seconds[src] = time.monotonic() - t0
        refs[src] = contents(out)
        print(f"reference {os.path.basename(src)}: {len(refs[src][0])} tiles, {len(refs[src][1])} elevation rows, {seconds[src]:.2f} s")
    yield WORK, SOURCES, refs, seconds
    print(f"resume-check: {stats['after_commit']}/{stats['runs']} kills landed after at least one commit of tiles, "
          f"{stats['with_roots']}/{stats['runs']} after a finished root; the resumed builds took {stats['roots']} finished "
          f"roots ({stats['resumed']} tiles) from the journals")


@pytest.mark.parametrize("i", range(RUNS))
def test_killed_build_resumes_to_the_uninterrupted_archive(tilepack, references, i):
    BIN = tilepack
    WORK, SOURCES, refs, seconds = references
    stats["runs"] += 1
    src = SOURCES[i % 2]
    out = os.path.join(WORK, f"run{i}.mbtiles")
    kills = []
    for attempt in range(2 if i % 4 == 3 else 1):
        args = [BIN, "build", src, "-o", out, *OPTS] + (["--resume"] if attempt else [])
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        at = rng.uniform(0.02, 0.98) * seconds[src]
        time.sleep(at)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        p.wait()
        kills.append(f"{at:.2f}s{'' if p.returncode == -signal.SIGKILL else ' (finished first)'}")
    temps = [f for f in os.listdir(WORK) if f.startswith(f"run{i}.mbtiles.tmp-")
             and not f.endswith(("-wal", "-shm", "-journal"))]
    tiles_in, roots_in = (0, 0)
    for t in temps:
        c = committed(os.path.join(WORK, t))
        tiles_in, roots_in = max(tiles_in, c[0]), max(roots_in, c[1])
    stats["after_commit"] += tiles_in > 0 or roots_in > 0
    stats["roots"] += roots_in
    stats["with_roots"] += roots_in > 0
    r = subprocess.run([BIN, "build", src, "-o", out, *OPTS, "--resume"], capture_output=True, text=True)
    m = re.search(r"resumed .*: (\d+) tiles were already done", r.stdout)
    done = int(m.group(1)) if m else 0
    stats["resumed"] += done
    same = r.returncode == 0 and contents(out) == refs[src]
    left = [f for f in os.listdir(WORK) if f.startswith(f"run{i}.mbtiles.tmp")]
    ok = same and not left
    print(f"run {i:2d} {os.path.basename(src):20s} killed at {', '.join(kills):24s} committed {tiles_in:4d} tiles "
          f"{roots_in:3d} roots, resumed {done:5d} tiles: {'equal' if same else 'DIFFERENT'}"
          f"{'' if not left else ' (temporary files left: ' + ' '.join(left) + ')'}")
    if r.returncode != 0:
        print("   ", r.stderr.strip())
    if os.path.exists(out):
        os.unlink(out)
    assert ok, (f"run {i}: {'equal' if same else 'DIFFERENT from the uninterrupted build'}"
               f"{'' if not left else '; temporary files left: ' + ' '.join(left)}; {r.stderr.strip()[-300:]}")

