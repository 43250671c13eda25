"""What the Python scripts still in Scripts/ share: require() and tilepack_bin(), both
checks/lib/common.py's (exiting instead of raising). The checks are a pytest suite in checks/;
their helpers (checks/lib/, one copy each) are reachable from the scripts too: this module lends
them the checks package's path, so `from checks.lib.common import psnr` works beside `from checks
import require`."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
__path__ = [os.path.join(ROOT, "checks")]  # checks.lib.* resolve to checks/lib/*


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
