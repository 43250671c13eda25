"""Ctrl-C and SIGTERM during `tilepack build`, on a real GeoTIFF (SampleRegions/montblanc-color.tif,
PNG tiles, zooms 9-13, one worker): the build is interrupted with SIGINT after its first tiles
(exit 130), its `--resume` with SIGTERM (exit 143), each printing `interrupted: run the same
command with --resume to continue (N tiles done)` and keeping the temporary archive; a last
`--resume` completes, its summary counts the whole archive and what that run added, and the
archive equals an uninterrupted build's, tile for tile and elevation row for row. Then `serve` on
a port another socket holds says `port N is in use` and exits 1.

    python3 -m pytest checks/test_interrupt_check.py
"""
import glob
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess

import pytest

SOURCE = "montblanc-color.tif"
OPTIONS = ["--codec", "png", "--workers", "1", "--max-zoom", "13"]
MESSAGE = re.compile(r"^interrupted: run the same command with --resume to continue \((\d+) tiles done\)$", re.M)


def contents(path):
    """Every tile and elevation row of an archive, by (z, x, y)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        tiles = {(z, x, y): bytes(d) for z, x, y, d in db.execute("SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles")}
        rows = {(z, x, y): bytes(d) for z, x, y, d in
                db.execute("SELECT zoom_level, tile_column, tile_row, data FROM elevation")} if db.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'elevation'").fetchone() else {}
    return tiles, rows


def interrupted_build(tilepack, args, signum, cwd):
    """Starts `build ARGS --progress json`, sends `signum` at its first progress line that shows a
    tile done and work left, and returns (exit status, stderr)."""
    proc = subprocess.Popen([tilepack, "build", *args, "--progress", "json"], cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = []
    try:
        for line in proc.stderr:
            lines.append(line)
            try:
                p = json.loads(line)
            except ValueError:
                continue
            if 0 < p["done"] < p["total"]:
                proc.send_signal(signum)
                break
        rest = proc.communicate(timeout=120)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, "".join(lines) + rest


@pytest.fixture(scope="module")
def runs(tilepack, sample_regions, tmp_path_factory):
    work = str(tmp_path_factory.mktemp("tilepack-interrupt"))
    source = os.path.join(sample_regions, SOURCE)
    out = {}
    r = subprocess.run([tilepack, "build", source, "-o", "reference.mbtiles", *OPTIONS, "--quiet"], cwd=work,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    args = [source, "-o", "x.mbtiles", *OPTIONS]
    out["int"] = interrupted_build(tilepack, args, signal.SIGINT, work)
    out["int.left"] = sorted(os.path.basename(p) for p in glob.glob(f"{work}/x.mbtiles*"))
    out["term"] = interrupted_build(tilepack, args + ["--resume"], signal.SIGTERM, work)
    out["term.left"] = sorted(os.path.basename(p) for p in glob.glob(f"{work}/x.mbtiles*"))
    r = subprocess.run([tilepack, "build", *args, "--resume", "--quiet"], cwd=work, capture_output=True, text=True,
                       timeout=600)
    out["resume"] = (r.returncode, r.stdout, r.stderr)
    out["reference"] = contents(f"{work}/reference.mbtiles")
    out["resumed"] = contents(f"{work}/x.mbtiles") if os.path.exists(f"{work}/x.mbtiles") else None
    out["left"] = glob.glob(f"{work}/x.mbtiles.tmp-*")
    return out


def test_sigint_exits_130_with_the_resume_message(runs):
    status, err = runs["int"]
    assert status == 130 and MESSAGE.search(err), f"exit {status}: {err[-500:]}"


def test_sigint_keeps_the_temporary_archive_and_no_final_one(runs):
    left = runs["int.left"]
    assert "x.mbtiles" not in left and any(re.fullmatch(r"x\.mbtiles\.tmp-\d+", n) for n in left), left


def test_sigterm_of_the_resume_exits_143_with_more_tiles_done(runs):
    status, err = runs["term"]
    m, first = MESSAGE.search(err), MESSAGE.search(runs["int"][1])
    assert status == 143 and m, f"exit {status}: {err[-500:]}"
    assert first and int(m.group(1)) >= int(first.group(1)), (m.group(0), first.group(0))
    assert "x.mbtiles" not in runs["term.left"], runs["term.left"]


def test_the_last_resume_completes_and_cleans_up(runs):
    status, _, err = runs["resume"]
    assert status == 0 and runs["left"] == [], f"exit {status}: {err[-500:]} left {runs['left']}"


def test_the_resumed_summary_counts_the_whole_archive(runs):
    """The whole archive's tiles (and per zoom), this run's additions, and as already done exactly
    the N the interrupted run's message promised."""
    stdout = runs["resume"][1]
    total = len(runs["reference"][0])
    m = re.search(r"^wrote x\.mbtiles: (\d+) tiles", stdout, re.M)
    added = re.search(r"resumed \S+: this run added (\d+) tiles; (\d+) planned tiles were already done", stdout)
    zooms = re.search(r"per zoom: (.*)$", stdout, re.M)
    promised = MESSAGE.search(runs["term"][1])
    assert m and int(m.group(1)) == total, stdout
    assert added and promised and int(added.group(2)) == int(promised.group(1)), (stdout, runs["term"][1][-200:])
    # The colour sample has no empty tiles: what this run added and what was done make the whole.
    assert int(added.group(1)) + int(added.group(2)) == total, stdout
    assert zooms and sum(int(n) for n in re.findall(r"z\d+: (\d+)", zooms.group(1))) == total, stdout


def test_the_resumed_archive_equals_the_uninterrupted_one(runs):
    tiles, rows = runs["reference"]
    assert runs["resumed"] is not None
    got_tiles, got_rows = runs["resumed"]
    assert got_tiles.keys() == tiles.keys() and got_rows.keys() == rows.keys()
    differ = [k for k in tiles if got_tiles[k] != tiles[k]] + [k for k in rows if got_rows[k] != rows[k]]
    assert not differ, f"{len(differ)} tiles or rows differ, e.g. {differ[:3]}"


def test_serve_on_a_port_in_use_says_so_and_exits_1(tilepack, tmp_path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        r = subprocess.run([tilepack, "serve", "--library", str(tmp_path), "--port", str(port)], capture_output=True,
                           text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1:] == [f"error: port {port} is in use (on 127.0.0.1)"], \
        f"exit {r.returncode}: {r.stderr[-300:]}"
