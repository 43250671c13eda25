# Sourced by the region-store checks (regions-e2e, regions-attack, revocation-check,
# viewer-check, edge-mask-check): a store library over SampleRegions as a publisher and a
# device would set it up, in a work directory of the caller's.
#
#   source Scripts/lib/sample-store.sh
#   sample_store_setup "$work"      # sets T, LIB, TRUST, PUB, SIM, LEDGER; exports XDG_* into $work
#
# - The two Mont Blanc archives are built once per tilepack binary (PNG tiles up to zoom 13,
#   the zooms the checks look at) into .build/sample-store/ and copied into $work/lib.
# - The publisher: a key of its own ($work/publisher, outside the library) signs the sample
#   catalog into $work/lib/catalog.jws (archive hashes filled in).
# - The test App Store lives in $work/xdg/tilepack/simulator (Apple's side); the device's
#   trust file ($work/trust.json) pins its root, the bundle id and the publisher's public key.

sample_store_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

sample_store_archives() {  # builds (once per binary) and prints the cache directory
    local cache="$sample_store_root/.build/sample-store"
    mkdir -p "$sample_store_root/.build"
    # Under a lock: .ci/run runs these checks in two lanes at once, and both may find the
    # cache stale; the second waits and then finds it built.
    (
        flock 9
        local stamp="$cache/built-with" id
        id=$(sha256sum "$T" | cut -c1-16)
        if [ "$(cat "$stamp" 2>/dev/null)" != "$id" ]; then
            rm -rf "$cache"; mkdir -p "$cache"
            for sample in montblanc-dem montblanc-color; do
                "$T" build "$sample_store_root/SampleRegions/$sample.tif" -o "$cache/$sample.mbtiles" \
                    --codec png --max-zoom 13 --progress none >/dev/null || exit 1
            done
            echo "$id" > "$stamp"
        fi
    ) 9> "$cache.lock" || return 1
    echo "$cache"
}

sample_store_setup() {  # WORKDIR
    local work=$1
    T=${T:-${BIN:-$sample_store_root/.build/debug/tilepack}}
    LIB="$work/lib"; TRUST="$work/trust.json"; PUB="$work/publisher"
    export XDG_DATA_HOME="$work/xdg" XDG_CONFIG_HOME="$work/config"
    SIM="$XDG_DATA_HOME/tilepack/simulator"; LEDGER="$XDG_DATA_HOME/tilepack/ledger.sqlite"
    mkdir -p "$LIB" "$PUB" "$XDG_DATA_HOME" "$XDG_CONFIG_HOME"
    local cache
    cache=$(sample_store_archives) || { echo "building the sample archives failed" >&2; return 1; }
    cp "$cache"/*.mbtiles "$LIB/"
    cp "$sample_store_root/SampleRegions/catalog.json" "$LIB/"
    "$T" catalog keygen -o "$PUB/publisher.jwk" > "$PUB/publisher.public.jwk" || return 1
    "$T" catalog sign "$LIB/catalog.json" --key "$PUB/publisher.jwk" >/dev/null || return 1
    "$T" store trust --simulator "$SIM" --publisher "$PUB/publisher.public.jwk" \
        --bundle-id com.tilepack.samples -o "$TRUST" >/dev/null || return 1
}
