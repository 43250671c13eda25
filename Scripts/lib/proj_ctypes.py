"""The old name of checks/lib/proj_ctypes.py (one copy), for the scripts still in Scripts/."""
import checks  # noqa: F401  (Scripts/lib/checks.py: lends the checks package's path)
from checks.lib.proj_ctypes import *  # noqa: F401,F403
from checks.lib.proj_ctypes import Proj, ProjError, lib  # noqa: F401
