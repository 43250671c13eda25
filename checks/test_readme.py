"""The README read cold: every fenced ```sh block of README.md runs as written, in order, from the
repository root, and the README stays a user's page (short, no machine paths, no issue numbers,
every subcommand in its command table, the test command the one CI runs).

Which blocks run (the markers are an HTML comment on the line just before the fence):
- ```sh blocks run; ```console, ```swift, … blocks are shown, not run.
- `<!-- norun: REASON -->` keeps a block from running; the reason is required (macOS lines, the
  `swift test` CI already runs, an install that writes outside the tree, long-running things).
- `<!-- pending: WHAT -->` keeps a block that uses a feature not landed yet from running; the
  lead removes the marker when it lands, and the block then runs like any other.

How they run: `bash -e -o pipefail -c BLOCK` with the repository root as the working directory,
one block after another, each under a time limit (README_BLOCK_TIMEOUT, default 300 s); `swift
run` uses the debug build already there (CI's `swift test` made it), and a bare `tilepack` is the
binary under test ($BIN, first on PATH). XDG_CONFIG_HOME and XDG_DATA_HOME point into a temporary
directory, so nothing lands in the user's home. A block that starts `tilepack serve` runs in the
background under `timeout`; the check waits until its port (`--port N`, else 8080) accepts a
connection, runs the next blocks of the same section against it, then stops it with SIGTERM. The
files the blocks create are removed afterwards: `git status --porcelain --ignored` before and
after, and every new path is deleted (never anything that was there before). A failing block fails
the check naming its line in README.md and its first command.

Usage: python3 -m pytest checks/test_readme.py      (BIN=path/to/tilepack; default the debug build)
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from checks.lib.common import ROOT

README = os.path.join(ROOT, "README.md")
MAX_LINES = 300
BLOCK_TIMEOUT = int(os.environ.get("README_BLOCK_TIMEOUT", "300"))
SERVE_STARTUP = 60
MARKER = re.compile(r"^<!--\s*(norun|pending)\s*(?::\s*(.*?))?\s*-->$")


class Block:
    """One fenced code block: its language, the line of its opening fence (1-based), its text and
    the marker before it (None, 'norun' or 'pending') with the marker's reason."""

    def __init__(self, lang, line, text, marker, reason, section):
        self.lang, self.line, self.text = lang, line, text
        self.marker, self.reason, self.section = marker, reason, section

    @property
    def first_command(self):
        for raw in self.text.splitlines():
            s = raw.strip()
            if s and not s.startswith("#"):
                return s
        return "(empty block)"

    @property
    def starts_server(self):
        return re.search(r"(^|\s)(tilepack|swift run tilepack) serve\b", self.first_command) is not None

    def name(self):
        return f"README.md:{self.line} `{self.first_command}`"


def readme_text():
    with open(README, encoding="utf-8") as f:
        return f.read()


def blocks(text):
    """Every fenced block of the README in order, with the marker on the nearest non-blank line
    above its fence and the `## ` section it is in."""
    out, lines = [], text.split("\n")
    i, section = 0, ""
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line
        m = re.match(r"^```(\S*)\s*$", line)
        if not m:
            i += 1
            continue
        start, body = i, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        mk = MARKER.match(lines[j].strip()) if j >= 0 else None
        out.append(Block(m.group(1), start + 1, "\n".join(body) + "\n",
                         mk.group(1) if mk else None, (mk.group(2) or "") if mk else "", section))
        i += 1
    return out


# ------------------------------------------------------------------ the page itself

def test_readme_is_short():
    n = readme_text().count("\n")
    assert n < MAX_LINES, f"README.md has {n} lines; a user's page stays under {MAX_LINES} (details go in docs/)"


def test_no_machine_paths():
    bad = [(k + 1, l) for k, l in enumerate(readme_text().split("\n"))
           if re.search(r"(^|[\s`(\"'=])/(work|tmp|home|root|Users|var/folders)/", l)]
    assert not bad, "machine paths in README.md: " + "; ".join(f"line {k}: {l.strip()}" for k, l in bad)


def test_no_issue_numbers():
    bad = [(k + 1, l) for k, l in enumerate(readme_text().split("\n"))
           if re.search(r"\bissues?\s+#?\d+|(^|[\s(])#\d+\b", l, re.IGNORECASE)]
    assert not bad, "issue references in README.md: " + "; ".join(f"line {k}: {l.strip()}" for k, l in bad)


def test_markers_carry_a_reason():
    bad = [b.name() for b in blocks(readme_text()) if b.marker == "norun" and not b.reason]
    assert not bad, "`<!-- norun: REASON -->` needs its reason: " + ", ".join(bad)


def test_markers_stand_before_sh_blocks():
    """A marker before a block that would not run anyway is a mistake in the page (it hides
    nothing, and a reader of the source is misled)."""
    bad = [b.name() for b in blocks(readme_text()) if b.marker and b.lang != "sh"]
    assert not bad, "markers before blocks that are not ```sh: " + ", ".join(bad)


def test_the_test_command_is_what_ci_runs():
    """The quick start's test command is exactly the one .ci/run runs (`swift test`), in a block of
    its own (norun: CI runs it as its first step)."""
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        ci = f.read()
    assert re.search(r"^step swift test$", ci, re.M), ".ci/run no longer runs `step swift test`"
    tests = [b for b in blocks(readme_text()) if b.lang == "sh" and b.text.strip() == "swift test"]
    assert tests, "README.md has no ```sh block that is exactly `swift test`"


def test_apt_packages_are_the_ones_ci_installs():
    """The install line's Debian packages are among those .ci/run installs (it is the line CI
    proves works)."""
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        m = re.search(r"^for pkg in (.*?); do", f.read(), re.M)
    assert m, ".ci/run's package loop not found"
    ci = set(m.group(1).split())
    named = set()
    for b in blocks(readme_text()):
        for line in b.text.splitlines():
            if re.search(r"\bapt(-get)? install\b", line):
                named |= {w for w in line.split("install", 1)[1].split() if not w.startswith("-")}
    assert named, "README.md names no apt-get install line"
    assert named <= ci, f"README.md installs what .ci/run does not: {sorted(named - ci)}"


def test_links_resolve():
    text = readme_text()
    missing = []
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        if not os.path.exists(os.path.join(ROOT, target)):
            missing.append(target)
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_subcommand_is_in_the_command_table(tilepack):
    """`tilepack --help`'s subcommands each have a row `| \\`tilepack NAME …\\` |` in the README."""
    p = subprocess.run([tilepack, "--help"], capture_output=True, text=True, timeout=60)
    help_text = p.stdout + p.stderr
    sub = help_text.split("SUBCOMMANDS:", 1)
    assert len(sub) == 2, f"`tilepack --help` lists no SUBCOMMANDS:\n{help_text}"
    names = re.findall(r"^  ([a-z][a-z0-9-]*) ", sub[1], re.M)
    assert names, f"no subcommand names found in `tilepack --help`:\n{help_text}"
    text = readme_text()
    absent = [n for n in names if n != "help" and not re.search(rf"^\|\s*`tilepack {re.escape(n)}\b", text, re.M)]
    assert not absent, f"subcommands missing from README.md's command table: {absent}"


# ------------------------------------------------------------------ the blocks, run

def _tree_state():
    p = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True, text=True,
                       check=True)
    return {line[3:].strip().strip('"') for line in p.stdout.splitlines() if line}


def _tracked_changes():
    p = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                       text=True, check=True)
    return set(p.stdout.splitlines())


def _port_of(block):
    m = re.search(r"--port[ =](\d+)", block.first_command)
    return int(m.group(1)) if m else 8080


def _port_open(port):
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _report(block, p):
    out = (p.stdout or "")[-1500:]
    err = (p.stderr or "")[-1500:]
    return f"{block.name()} exited {p.returncode}\n--- stdout (tail)\n{out}\n--- stderr (tail)\n{err}"


def _stop(proc):
    """SIGTERM to the server block's process group; SIGKILL if it has not gone in 10 s."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise AssertionError("the README's serve block did not stop within 10 s of SIGTERM")


@pytest.fixture(scope="module")
def environment(tilepack):
    """PATH with the binary under test as `tilepack`, XDG homes in a temporary directory."""
    home = tempfile.mkdtemp(prefix="readme-check-")
    bindir = os.path.join(home, "bin")
    os.makedirs(bindir)
    os.symlink(tilepack, os.path.join(bindir, "tilepack"))
    env = dict(os.environ)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    # As in a user's home, the XDG directories exist; tilepack's own directories in them do not.
    for var, name in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data")):
        env[var] = os.path.join(home, name)
        os.makedirs(env[var])
    yield env
    shutil.rmtree(home, ignore_errors=True)


def test_sh_blocks_run_as_written(environment):
    runnable = [b for b in blocks(readme_text()) if b.lang == "sh" and not b.marker]
    assert runnable, "README.md has no ```sh block to run"
    before, tracked_before = _tree_state(), _tracked_changes()
    server, server_section, failures, ran = None, None, [], []
    try:
        for b in runnable:
            if server is not None and b.section != server_section:
                _stop(server)
                server = None
            if failures:
                break
            if b.starts_server:
                port = _port_of(b)
                if _port_open(port):
                    failures.append(f"{b.name()}: port {port} is already in use before the block ran")
                    break
                # Its output goes to files: a request log into a pipe nobody reads would block it.
                log = tempfile.TemporaryFile(mode="w+")
                server = subprocess.Popen(["timeout", "-s", "TERM", str(BLOCK_TIMEOUT), "bash", "-e", "-o",
                                           "pipefail", "-c", b.text], cwd=ROOT, env=environment,
                                          stdout=log, stderr=subprocess.STDOUT, text=True, start_new_session=True)
                server_section = b.section
                deadline = time.monotonic() + SERVE_STARTUP
                while time.monotonic() < deadline and server.poll() is None and not _port_open(port):
                    time.sleep(0.2)
                if not _port_open(port):
                    if server.poll() is None:
                        _stop(server)
                    server.wait()
                    log.seek(0)
                    failures.append(f"{b.name()}: the server did not listen on port {port} within "
                                    f"{SERVE_STARTUP} s (exit {server.returncode})\n{log.read()[-3000:]}")
                    server = None
                    break
                ran.append(b.name())
                continue
            try:
                p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", b.text], cwd=ROOT, env=environment,
                                   capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
            except subprocess.TimeoutExpired:
                failures.append(f"{b.name()}: still running after {BLOCK_TIMEOUT} s")
                break
            if p.returncode != 0:
                failures.append(_report(b, p))
                break
            ran.append(b.name())
    finally:
        if server is not None:
            _stop(server)
        created = sorted(_tree_state() - before)
        for rel in created:
            path = os.path.normpath(os.path.join(ROOT, rel))
            if not path.startswith(ROOT + os.sep) or rel.rstrip("/") in (".build", ".git"):
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            elif os.path.lexists(path):
                os.remove(path)
    changed = sorted(_tracked_changes() - tracked_before)
    assert not failures, failures[0]
    assert not changed, f"README blocks changed tracked files: {changed}"
    print(f"{len(ran)} blocks ran; removed what they made: {created}")
