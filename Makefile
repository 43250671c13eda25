# The index of what a developer runs; each target names the one command behind it.
.PHONY: test api closure format lint ci

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

# What CI runs on a clean clone: install, the tests, the checks, the sanitizers, fuzzing.
ci:
	bash .ci/run
