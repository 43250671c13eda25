# The index of what a developer runs; each target names the one command behind it.
.PHONY: test api closure format lint checks bench ci

# The README's test command: the whole Swift suite.
test:
	swift test

# docs/API.md: the app product's public API from the symbol graphs (Scripts/api-doc).
api:
	Scripts/api-doc

# The layering (Scripts/module-closure holds the table) and the app product's closure.
closure:
	Scripts/module-closure

# The house style (.swift-format, swift-format from the toolchain): rewrite, or check as CI does.
format:
	swift format --in-place --recursive --parallel Sources Tests

lint:
	swift format lint --strict --recursive --parallel Sources Tests

# The checks (checks/, pytest) against $$BIN, else the debug build built once: all but the
# benchmarks. Select with PYTEST_ARGS, e.g. make checks PYTEST_ARGS='-m "not slow and not gdal"'.
# The timing parts default to what .ci/run runs on a debug binary (set them to time a release
# one: BIN=.build/release/tilepack LINEAR_PARTS=catalog,vrt CHECK_SPEED=1 BUILD_OPTS= …).
checks: export LINEAR_PARTS ?= linearity
checks: export CHECK_SPEED ?= 0
checks: export BUILD_OPTS ?= --codec pvrtc4 --level fast
checks: export CLUSTER_SIZE ?= 768
checks: export PROJ_REGISTRY_SAMPLE ?= 400
checks:
	python3 -m pytest checks -m "not bench" $(PYTEST_ARGS)

# The benchmarks (checks/bench/, each a script; BENCHMARKS.md gives their commands): all of them
# with their default arguments, or those whose name contains BENCH (make bench BENCH=serve-bench);
# BENCH_ARGS passes arguments.
bench:
	python3 -m pytest checks/bench -m bench $(if $(BENCH),-k "$(BENCH)") $(PYTEST_ARGS)

# What CI runs on a clean clone: install, the tests, the checks, the sanitizers, fuzzing.
ci:
	bash .ci/run
