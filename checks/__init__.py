"""tilepack's checks: end-to-end checks of the built `tilepack` binary against real data
(../shared/testdata), SampleRegions and reference tools (GDAL, PROJ, Chromium), run by pytest.

    make checks                      # every check but the benchmarks
    python3 -m pytest checks/test_bounds_check.py
    python3 -m pytest checks -m "not slow and not gdal and not browser"

The binary is $BIN when set (.ci/run sets it), otherwise this checkout's debug build, built once
(checks/conftest.py). Shared helpers live in checks/lib/, benchmarks in checks/bench/ (not
collected by `make checks`), tools the checks drive in checks/tools/. Python never runs inside
`swift test`."""
