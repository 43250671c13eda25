"""The old name of checks/lib/terrain.py (one copy), for the scripts still in Scripts/."""
from checks import Checks, tilepack_bin  # noqa: F401  (Scripts/lib/checks.py)
from checks.lib.terrain import *  # noqa: F401,F403
from checks.lib.terrain import ROOT, TESTDATA, run, tilepack  # noqa: F401

T = tilepack_bin()
