"""The region store against its own device's owner (issue 23, Must show 3). SampleRegions as a
store library (catalog signed by a publisher key kept outside it, a trust file pinning the
test App Store's root, checks/lib/store.py); the device legitimately owns the
Chamonix region. Then, every command passing --trust explicitly, an attacker who can read
and edit every file the CLI writes tries: minting transactions with any file found in the
library or ledger directory and with a CA of their own; swapping keys and certificates in
the library, ledger and simulator directories; deleting, editing, replacing, looping (and
FIFO-ing) the catalog; another catalog reusing a product id at another price and kind; an
old signed blob put back into a ledger row after a refund; the clock set back past a
subscription's expiry (faketime); deleting the newest rows and the observed-time
watermark; a double buy; 20 SIGKILLs during a buy and then restore; a read-only ledger and
library (an unprivileged user, the WAL ledger without its -wal/-shm).

After every case the tiles answered 200 by `serve` (PNG, raw payload, terrain, /view, with
each body's SHA-256), the exit status of `query` at points on both sides and of
`render --tile` (with the picture's SHA-256) at z11–13 over both polygons must equal the
legitimately owned state's (computed the same way): nothing beyond what was bought (plus
the free zooms), and nothing bought lost.
The cases run in order (each on a copy of the device), played once by a module fixture from
checks/lib/regions_attack.py; each finding is a test of its own. Needs faketime (.ci/run
installs it) and runs an unprivileged user through setpriv (root).

    python3 -m pytest checks/test_regions_attack.py
"""
import os
import shutil
import tempfile

import pytest

from checks.lib import regions_attack
from checks.lib.common import Outcomes
from checks.lib.store import sample_store

pytestmark = [pytest.mark.slow]

FINDINGS = [
    "the legitimate purchase of the Chamonix region",
    "owning Chamonix opens more than owning nothing",
    "minted transactions (attacker CAs with Apple's OIDs, the real x5c with a forged signature)",
    "keys and certificates swapped in the library, ledger and simulator directories",
    "a purchase signed by the swapped-in CA is refused",
    "after the refused purchase",
    "catalog deleted (fails closed: free zooms of the accepted catalog only)",
    "catalog edited (free_max_zoom 24 in the signed payload) (fails closed: free zooms of the accepted catalog only)",
    "catalog replaced by one signed with another key under the publisher's kid (fails closed: free zooms of the accepted catalog only)",
    "catalog replaced by an unsigned catalog.json selling the world for free (fails closed: free zooms of the accepted catalog only)",
    "catalog looped (a symlink to itself) (fails closed: free zooms of the accepted catalog only)",
    "catalog a FIFO (must not hang) (fails closed: free zooms of the accepted catalog only)",
    "an older catalog edition (serial 1 after 5 was accepted) is refused",
    "buying the subscription's id from another catalog (unsigned, forged) charges nothing",
    "the real library after the other catalog's attempts",
    "the pre-refund signed blob restored into its row",
    "a yearly subscription bought two years ago (faketime)",
    "now, the subscription has expired",
    "the clock set back to before its expiry",
    "the newest row and the watermark deleted, the clock set back",
    "buying Chamonix again: already owned, nothing charged",
    "after the double buy",
    "20 SIGKILLed buys then restore: charged at most once, nothing left unfinished",
    "after the killed buys and restore",
    "read-only ledger (no -wal/-shm) and library, as an unprivileged user",
    "the read-only commands wrote nothing",
]


@pytest.fixture(scope="module")
def outcomes(tilepack):
    if not shutil.which("faketime"):
        pytest.fail("faketime is missing (apt-get install faketime; .ci/run installs it)")
    # Not under pytest's tmp_path (0700 under /tmp/pytest-of-root): the unprivileged user must
    # reach the read-only device.
    work = tempfile.mkdtemp(prefix="tilepack-attack-")
    os.chmod(work, 0o755)
    try:
        s = sample_store(os.path.join(work, "device"), tilepack)
        check = Outcomes()
        check.play(regions_attack.scenario, tilepack, work, s.pub)
        yield check
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.parametrize("finding", FINDINGS)
def test_regions_attack(outcomes, finding):
    outcomes.check(finding)
