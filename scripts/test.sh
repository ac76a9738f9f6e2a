#!/usr/bin/env bash
# Builds gpool with ASan+UBSan and runs the whole test suite (unit, scenario, end-to-end).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BUILD=${GPOOL_TEST_BUILD:-build/asan}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DGPOOL_SANITIZE=ON -DGPOOL_WERROR=ON >/dev/null
cmake --build "$BUILD" -j"$(nproc)" >/dev/null
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$BUILD"
ctest --output-on-failure -j"$(nproc)" "$@"
