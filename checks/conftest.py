"""The fixtures every check shares: ONE tilepack binary per session ($BIN, else this checkout's
debug build, built once), the test data root (../shared/testdata) and SampleRegions. Helpers are
in checks/lib/."""
import os

import pytest

from checks.lib import common


@pytest.fixture(scope="session")
def tilepack():
    """The path of the tilepack binary under test ($BIN, else `swift build --product tilepack`
    once and .build/debug/tilepack)."""
    try:
        return common.tilepack_bin()
    except common.SetupError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def testdata():
    """The real test data root, ../shared/testdata beside the checkout."""
    try:
        return common.data_root()
    except common.SetupError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def sample_regions():
    """The SampleRegions directory (the sample store's GeoTIFFs and catalog)."""
    assert os.path.isdir(common.SAMPLE_REGIONS), common.SAMPLE_REGIONS
    return common.SAMPLE_REGIONS


@pytest.fixture(scope="session")
def root():
    """The repository's root."""
    return common.ROOT
