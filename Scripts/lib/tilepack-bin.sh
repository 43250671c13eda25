# The tilepack binary a check runs, the same for every bash check (checks.py's tilepack_bin()
# is the Python side): $BIN when it is set (.ci/run sets it to a copy of its one debug build,
# so that the checks never touch .build while the sanitizer steps rebuild it), otherwise this
# checkout's debug build, built first. Sets and exports BIN; returns non-zero with the reason.
tilepack_bin() {
    if [ -n "${BIN:-}" ]; then
        [ -x "$BIN" ] || { echo "BIN=$BIN is not an executable file" >&2; return 1; }
    else
        local root log
        root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
        log=$(mktemp)
        if ! (cd "$root" && swift build --product tilepack) > "$log" 2>&1; then
            tail -20 "$log" >&2; rm -f "$log"; echo "swift build --product tilepack failed" >&2; return 1
        fi
        rm -f "$log"
        BIN="$root/.build/debug/tilepack"
    fi
    export BIN
}
