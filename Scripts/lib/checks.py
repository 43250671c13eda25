"""The check counter the Python scripts still in Scripts/ share: one ok/FAIL line per check and
the closing line ("N passed, M failed"). The checks run by CI are a pytest suite in checks/;
their helpers (checks/lib/, one copy each) are reachable from the scripts too: this module lends
them the checks package's path, so `from checks.lib.common import psnr` works beside `from checks
import Checks`."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
__path__ = [os.path.join(ROOT, "checks")]  # checks.lib.* resolve to checks/lib/*


class Checks:
    """Counts named checks and prints the closing line."""

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
    """Exits (status 1) naming what is missing when a Python module cannot be imported
    (checks/lib/common.py's require)."""
    from checks.lib import common
    try:
        common.require(*modules)
    except common.SetupError as e:
        sys.exit(str(e))


def tilepack_bin():
    """The tilepack binary a script runs (checks/lib/common.py's tilepack_bin(): $BIN, else
    this checkout's debug build, built once). Exits naming the problem."""
    from checks.lib import common
    try:
        return common.tilepack_bin()
    except common.SetupError as e:
        sys.exit(str(e))
