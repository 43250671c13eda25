"""The check counter every Python check in Scripts/ shares: one ok/FAIL line per check and the
closing line CI reads ("N passed, M failed")."""


class Checks:
    """Counts named checks and prints the closing line CI reads."""

    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("ok   " + name + (f" ({detail})" if detail else ""), flush=True)
        else:
            self.failed += 1
            print("FAIL " + name + (f": {detail}" if detail else ""), flush=True)
        return ok

    def summary(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 else 1


def require(*modules):
    """Exits (status 1, the environment) naming what is missing when a Python module cannot be
    imported: the checks install nothing at run time; every tool they use is pinned in
    checks/requirements.txt, which .ci/run installs."""
    import importlib
    missing = []
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError:
            missing.append(m)
    if missing:
        import sys
        sys.exit(f"{', '.join(missing)} missing: pip install -r checks/requirements.txt")


def tilepack_bin():
    """The tilepack binary a check runs, the same for every Python check (Scripts/lib/
    tilepack-bin.sh is the bash side): $BIN when it is set (.ci/run sets it to a copy of its one
    debug build, so the checks never touch .build while the sanitizer steps rebuild it),
    otherwise this checkout's debug build, built first. Exits naming the problem when neither."""
    import os
    import subprocess
    import sys
    binary = os.environ.get("BIN")
    if binary:
        if not os.access(binary, os.X_OK):
            sys.exit(f"BIN={binary} is not an executable file")
        return binary
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run(["swift", "build", "--product", "tilepack"], cwd=root, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit((p.stdout + p.stderr)[-2000:] + "\nswift build --product tilepack failed")
    os.environ["BIN"] = os.path.join(root, ".build/debug/tilepack")
    return os.environ["BIN"]
