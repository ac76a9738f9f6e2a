#!/usr/bin/env bash
# The newcomer's one command: installs dependencies, builds gpool, and starts a whole pool
# on this machine (`gpool up`: server + local agent, simulated GPUs when no NVIDIA GPU is
# found). Extra arguments go to `gpool up` (e.g. --sim 4xA100-80GB, --port 9000).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/release -j"$(nproc)" --target gpool_bin >/dev/null
echo "gpool built: $(pwd)/build/release/gpool (add it to PATH: export PATH=\$PWD/build/release:\$PATH)"
exec ./build/release/gpool up "$@"
