#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60) and exits non-zero if any of them finds a crash, a failed
# invariant, a timeout or a leak. Installs cargo-fuzz if it is missing. cargo-fuzz needs nightly-only flags
# (-Zsanitizer=address); RUSTC_BOOTSTRAP=1 lets the stable toolchain take them.
#
# The committed seeds in fuzz/corpus/<target>/ are read, never written: what libFuzzer finds goes to
# fuzz/target/corpus/<target>/ (ignored by git, kept between local runs). A crash is saved under
# fuzz/artifacts/<target>/; reproduce it with `RUSTC_BOOTSTRAP=1 cargo fuzz run <target> <file>` from the root.
#
# Usage: fuzz/run.sh [SECONDS]
set -euo pipefail

seconds="${1:-60}"
case "$seconds" in
'' | *[!0-9]*)
    echo "usage: $0 [SECONDS]" >&2
    exit 2
    ;;
esac

cd "$(dirname "$0")/.."
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1

targets=$(cargo fuzz list)
cargo fuzz build

failed=()
for target in $targets; do
    work="fuzz/target/corpus/$target"
    mkdir -p "$work"
    echo "=== $target: ${seconds}s"
    if ! cargo fuzz run "$target" "$work" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -print_final_stats=1; then
        failed+=("$target")
    fi
done

if ((${#failed[@]})); then
    echo "fuzzing failed: ${failed[*]} (inputs under fuzz/artifacts/)" >&2
    exit 1
fi
echo "fuzzing: every target ran ${seconds}s without a failure"
