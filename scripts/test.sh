#!/usr/bin/env bash
# Builds gpool with ASan+UBSan and runs the whole test suite (unit, scenario, end-to-end),
# then every libFuzzer harness of tests/fuzz for a bounded time (scripts/fuzz.sh, in its
# own build directory): GPOOL_TEST_FUZZ_S seconds each (default 20, two at a time, about
# 100 s in all; 0 leaves the harnesses out). Any crash, leak or hang fails the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${GPOOL_TEST_BUILD:-build/asan}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DGPOOL_SANITIZE=ON -DGPOOL_WERROR=ON >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >/dev/null
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
(cd "$BUILD" && ctest --output-on-failure -j"$(nproc)" "$@")

FUZZ_S=${GPOOL_TEST_FUZZ_S:-20}
if [ "$FUZZ_S" -gt 0 ]; then
  if ! command -v clang >/dev/null; then
    echo "test: SKIPPED the fuzz harnesses: clang is not installed (scripts/setup.sh installs it)" >&2
  else
    # A fresh corpus directory each time, and a fixed seed: the suite checks the seeds and
    # the same 20 s of mutation every run, so it passes or fails alike on every machine of
    # about this speed; scripts/fuzz.sh alone explores with a new seed each run.
    work=$(mktemp -d /tmp/gpool-fuzz.XXXXXX)
    trap 'rm -rf "$work"' EXIT
    GPOOL_FUZZ_WORK=$work GPOOL_FUZZ_JOBS=2 GPOOL_FUZZ_SEED=1 bash scripts/fuzz.sh "$FUZZ_S"
  fi
fi
