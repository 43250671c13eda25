"""The old name of checks/lib/packs.py (one copy), for the scripts still in Scripts/."""
from checks import Checks, tilepack_bin  # noqa: F401  (Scripts/lib/checks.py)
from checks.lib.packs import *  # noqa: F401,F403
from checks.lib.packs import ROOT, run, sample_store  # noqa: F401

T = tilepack_bin()
