#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The real-hardware check of gpool's NVML path, to run on a machine with an NVIDIA GPU,
# its driver and the CUDA toolkit (nvcc). It:
#   1. shows the GPU as the driver sees it (nvidia-smi);
#   2. builds gpool (Release) into build/gpu-check and runs the NVML unit tests;
#   3. starts a pool with `gpool up` on the real GPU (no --sim) in a temporary directory and
#      shows `gpool nodes -v`;
#   4. compiles a small CUDA program with nvcc that holds 2 GiB of GPU memory and keeps the
#      SMs busy, and runs it as a gpool job;
#   5. shows the job's memory and utilisation attributed to it in the agent's /metrics
#      (gpool_job_gpu_* series with job="<id>") next to the device's DCGM_FI_DEV_* figures,
#      the cost of one sampling round on real NVML, and the job's usage summary;
#   6. where an MPS control daemon can be started (nvidia-cuda-mps-control), starts one with
#      its pipes in the temporary directory, restarts the pool with `--sharing shared` and runs
#      two half-GPU jobs side by side: each must be enforced by MPS and have its own memory
#      attributed to it; then a job that allocates 8 GiB on a 4 GiB share must be refused;
#   7. stops the pool(s) and the MPS daemon and removes the temporary directory (also on
#      failure or Ctrl-C).
# Usage: scripts/gpu-check.sh [SECONDS]   (how long the CUDA job runs; default 40)
#        GPOOL_BIN=/path/to/gpool scripts/gpu-check.sh   uses a gpool built elsewhere (for a GPU
#        machine without the -dev packages) and skips step 2's build and unit tests.
# Exit status 0 when every check passed. Everything it prints is meant to be pasted into
# a report.
set -uo pipefail

JOB_SECONDS=${1:-40}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build/gpu-check
WORK=$(mktemp -d /tmp/gpool-gpu-check.XXXXXX)
GPOOL=${GPOOL_BIN:-$BUILD/gpool}
export GPOOL_CONFIG_DIR=$WORK/client
unset GPOOL_SERVER GPOOL_TOKEN
failures=0

step() { printf '\n=== %s\n' "$*"; }
ok() { printf 'ok: %s\n' "$*"; }
bad() {
  printf 'FAILED: %s\n' "$*"
  failures=$((failures + 1))
}
die() {
  printf 'FAILED: %s\n' "$*"
  exit 1
}
state_of() { "$GPOOL" show "$1" -o json | jq -r .state; }
# Waits up to SECONDS for each job to reach a final state (not pending, running or stopping).
wait_ended() {
  local seconds=$1
  shift
  for id in "$@"; do
    for _ in $(seq 1 "$seconds"); do
      case "$(state_of "$id")" in running | pending | stopping) sleep 1 ;; *) break ;; esac
    done
  done
}
cleanup() {
  if [ -x "$GPOOL" ]; then
    for pool in "$WORK/pool" "$WORK/shared"; do
      [ -d "$pool" ] && "$GPOOL" up --stop --data "$pool" >/dev/null 2>&1
    done
  fi
  [ -n "${MPS_STARTED:-}" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$WORK/mps nvidia-cuda-mps-control >/dev/null 2>&1
  [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "1. the GPU as the driver sees it"
command -v nvidia-smi >/dev/null || die "nvidia-smi not found: no NVIDIA driver on this machine"
nvidia-smi -L || die "nvidia-smi cannot list GPUs"
nvidia-smi --query-gpu=index,name,memory.total,driver_version,mig.mode.current,ecc.mode.current --format=csv
command -v nvcc >/dev/null || {
  for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do [ -x "$d/nvcc" ] && PATH=$d:$PATH && break; done
}
command -v nvcc >/dev/null || die "nvcc not found: install the CUDA toolkit (or put it on PATH)"
nvcc --version | tail -n 2

step "2. build gpool and run the NVML backend's unit tests"
for tool in curl jq; do command -v $tool >/dev/null || die "$tool not found (scripts/setup.sh installs it)"; done
if [ -n "${GPOOL_BIN:-}" ]; then
  [ -x "$GPOOL" ] || die "GPOOL_BIN=$GPOOL is not an executable"
  ok "using the gpool built elsewhere: $GPOOL ($("$GPOOL" version)); build and unit tests skipped"
else
  for tool in cmake cc; do command -v $tool >/dev/null || die "$tool not found (scripts/setup.sh installs the build dependencies)"; done
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$WORK/cmake.log" 2>&1 || { tail -20 "$WORK/cmake.log"; die "cmake configure"; }
  cmake --build "$BUILD" -j"$(nproc)" >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; die "build"; }
  ok "built $GPOOL ($("$GPOOL" version))"
  (cd "$BUILD" && ctest -R 'agent_(nvml|gpu_sim|telemetry|metrics|health)_test' --output-on-failure) ||
    bad "unit tests of the GPU backends"
fi

step "3. gpool up on the real GPU, then gpool nodes -v"
"$GPOOL" up --data "$WORK/pool" --port 0 --name gpu-check --detach || die "gpool up (logs: $WORK/pool/*.log)"
grep -h -i "nvml\|no NVIDIA GPU\|missing" "$WORK/pool/agent.log" 2>/dev/null | head -5
"$GPOOL" nodes -v || bad "gpool nodes -v"
node_json=$("$GPOOL" nodes -o json) || die "gpool nodes -o json"
model=$(echo "$node_json" | jq -r '.[] | select(.name == "gpu-check") | .model')
uuid0=$(echo "$node_json" | jq -r '.[] | select(.name == "gpu-check") | .gpu_list[0].uuid')
AGENT_URL=$(echo "$node_json" | jq -r '.[] | select(.name == "gpu-check") | .agent_url')
real_uuid0=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0 | tr -d ' ')
if [ "$uuid0" = "$real_uuid0" ]; then ok "GPU 0 is the real one: $uuid0 ($model)"; else bad "GPU 0 UUID: gpool says '$uuid0', nvidia-smi says '$real_uuid0' (is the agent simulated?)"; fi

step "4. a small CUDA program as a gpool job"
cat >"$WORK/busy.cu" <<'EOF'
// Holds GiB of GPU memory (default 2) and keeps every SM busy for the given number of seconds.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cuda_runtime.h>

__global__ void spin(float *data, size_t n, int rounds) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = data[i];
  for (int r = 0; r < rounds; r++) x = x * 0.999f + 0.001f;
  data[i] = x;
}

int main(int argc, char **argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 30;
  int gib = argc > 2 ? atoi(argv[2]) : 2;
  size_t bytes = (size_t)gib << 30, n = bytes / sizeof(float);
  float *d = nullptr;
  if (cudaMalloc(&d, bytes) != cudaSuccess) { fprintf(stderr, "cudaMalloc failed\n"); return 1; }
  cudaMemset(d, 0, bytes);
  printf("holding %d GiB on %s for %d s\n", gib, getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "?", seconds);
  fflush(stdout);
  time_t end = time(nullptr) + seconds;
  while (time(nullptr) < end) {
    spin<<<(unsigned)((n + 255) / 256), 256>>>(d, n, 200);
    if (cudaDeviceSynchronize() != cudaSuccess) { fprintf(stderr, "kernel failed\n"); return 1; }
  }
  cudaFree(d);
  printf("done\n");
  return 0;
}
EOF
nvcc -O2 -o "$WORK/busy" "$WORK/busy.cu" || die "nvcc could not compile the test program"
job=$("$GPOOL" submit -n gpu-check -g 1 -- "$WORK/busy" "$JOB_SECONDS") || die "gpool submit"
ok "submitted job $job"
for _ in $(seq 1 60); do
  [ "$(state_of "$job")" = running ] && break
  sleep 1
done
[ "$(state_of "$job")" = running ] || die "job $job did not start: $("$GPOOL" why "$job" 2>&1)"
ok "job $job runs on $("$GPOOL" show "$job" -o json | jq -c '.placements')"

step "5. the job's GPU use in the agent's /metrics"
seen=""
for _ in $(seq 1 30); do
  curl -fsS "$AGENT_URL/metrics" >"$WORK/metrics.txt" 2>"$WORK/curl.err" || true
  if grep -q "gpool_job_gpu_memory_used_bytes{.*job=\"$job\"" "$WORK/metrics.txt" &&
    grep "gpool_job_gpu_sm_util_percent{.*job=\"$job\"" "$WORK/metrics.txt" | grep -qv ' 0$'; then
    seen=yes
    break
  fi
  sleep 1
done
echo "--- device series (dcgm-exporter names)"
grep -E '^DCGM_FI_DEV_(GPU_UTIL|FB_USED|POWER_USAGE|GPU_TEMP|SM_CLOCK|TOTAL_ENERGY_CONSUMPTION)\{' "$WORK/metrics.txt"
echo "--- the job's own series (per-process accounting)"
grep -E "^gpool_job_gpu_[a-z_]+\{.*job=\"$job\"" "$WORK/metrics.txt"
echo "--- sampling cost on real NVML"
grep -E '^gpool_agent_sample_round' "$WORK/metrics.txt"
if [ -n "$seen" ]; then
  mem=$(grep "gpool_job_gpu_memory_used_bytes{.*job=\"$job\"" "$WORK/metrics.txt" | awk '{print $NF}' | head -1)
  if awk -v m="$mem" 'BEGIN { exit !(m >= 2 * 1024 * 1024 * 1024) }'; then
    ok "job $job's memory is attributed to it: $mem bytes (>= 2 GiB)"
  else
    bad "job $job's attributed memory is $mem bytes, expected at least 2 GiB"
  fi
  ok "job $job's SM utilisation is attributed to it"
else
  bad "no non-zero gpool_job_gpu_sm_util_percent / memory series for job $job within 30 s from $AGENT_URL/metrics$(test -s "$WORK/curl.err" && printf ' (curl: %s)' "$(tail -n 1 "$WORK/curl.err")")"
fi
if command -v promtool >/dev/null; then
  promtool check metrics <"$WORK/metrics.txt" >"$WORK/promtool.txt" 2>&1
  rc=$?
  if [ $rc = 1 ] || grep -v '^DCGM_FI_' "$WORK/promtool.txt" | grep -q .; then bad "promtool: $(cat "$WORK/promtool.txt")"; else ok "promtool accepts the agent's /metrics"; fi
fi
echo "--- nodes -v while the job runs"
"$GPOOL" nodes -v
echo "--- the job's usage summary after it ends"
"$GPOOL" cancel "$job" >/dev/null 2>&1
wait_ended 30 "$job"
"$GPOOL" show "$job" -o json | jq '{id, state, usage}'

# The job series of one job in a scrape of /metrics: its value, or nothing.
job_series() { grep "^$1{.*job=\"$2\"" "$WORK/metrics.txt" | awk '{print $NF}' | head -1; }

step "6. two half-GPU jobs sharing the GPU under MPS"
if ! command -v nvidia-cuda-mps-control >/dev/null; then
  echo "skipped: nvidia-cuda-mps-control not found"
else
  "$GPOOL" up --stop --data "$WORK/pool" >/dev/null 2>&1
  mkdir -p "$WORK/mps" "$WORK/mps-log"
  export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps CUDA_MPS_LOG_DIRECTORY=$WORK/mps-log
  if nvidia-cuda-mps-control -d; then
    MPS_STARTED=yes
    ok "MPS control daemon started (pipes in $WORK/mps)"
  else
    bad "nvidia-cuda-mps-control -d failed"
  fi
  "$GPOOL" up --data "$WORK/shared" --port 0 --name gpu-check --sharing shared --detach >/dev/null ||
    die "gpool up --sharing shared (logs: $WORK/shared/*.log)"
  AGENT_URL=$("$GPOOL" nodes -o json | jq -r '.[] | select(.name == "gpu-check") | .agent_url')
  h1=$("$GPOOL" submit -n half-1 --gpu-fraction 0.5 -- "$WORK/busy" "$JOB_SECONDS") || die "gpool submit (half-1)"
  h2=$("$GPOOL" submit -n half-2 --gpu-fraction 0.5 -- "$WORK/busy" "$JOB_SECONDS") || die "gpool submit (half-2)"
  for _ in $(seq 1 60); do
    [ "$(state_of "$h1")$(state_of "$h2")" = runningrunning ] && break
    sleep 1
  done
  for h in "$h1" "$h2"; do
    # Until the agent reports the launch, the record shows the GPU's mode ("shared").
    for _ in $(seq 1 15); do
      doc=$("$GPOOL" show "$h" -o json)
      [ "$(jq -r .enforcement <<<"$doc")" = shared ] || break
      sleep 1
    done
    jq -c '{id, state, enforcement, placements: [.placements[] | {node, gpu_ids, gpu_milli}]}' <<<"$doc"
    enf=$(jq -r .enforcement <<<"$doc")
    if [ "$enf" = mps ]; then ok "job $h's share is enforced by MPS"; else bad "job $h's enforcement is '$enf', expected mps"; fi
  done
  seen=""
  for _ in $(seq 1 30); do
    curl -fsS "$AGENT_URL/metrics" >"$WORK/metrics.txt" 2>"$WORK/curl.err" || true
    m1=$(job_series gpool_job_gpu_memory_used_bytes "$h1")
    m2=$(job_series gpool_job_gpu_memory_used_bytes "$h2")
    if awk -v a="${m1:-0}" -v b="${m2:-0}" 'BEGIN { g = 2 * 1024 * 1024 * 1024; exit !(a >= g && b >= g) }'; then
      seen=yes
      break
    fi
    sleep 1
  done
  echo "--- the two jobs' series and the device's"
  grep -E "^gpool_job_gpu_(memory_used_bytes|sm_util_percent|processes)\{" "$WORK/metrics.txt"
  grep -E '^DCGM_FI_DEV_(GPU_UTIL|FB_USED)\{' "$WORK/metrics.txt"
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv
  # The driver counts MPS clients' kernels against the MPS server: a job's SM utilisation
  # is unknown there (no series), never a 0% that would call a busy job idle.
  for h in "$h1" "$h2"; do
    u=$(job_series gpool_job_gpu_sm_util_percent "$h")
    if [ "$u" = 0 ]; then bad "job $h shows 0% SM utilisation on a busy GPU"; else ok "job $h's SM utilisation: ${u:-unknown (no series)}"; fi
  done
  if [ -n "$seen" ]; then
    ok "each half-GPU job has its own memory attributed: $m1 and $m2 bytes"
  else
    bad "the half-GPU jobs' memory was not attributed to each within 30 s (job $h1: '${m1:-none}', job $h2: '${m2:-none}')"
  fi
  "$GPOOL" cancel "$h1" "$h2" >/dev/null 2>&1
  wait_ended 30 "$h1" "$h2"
  "$GPOOL" show "$h1" -o json | jq -c '{id, state, usage}'
  echo "--- a job that allocates 8 GiB on a 4 GiB share"
  over=$("$GPOOL" submit -n over-share --gpu-mem 4G -- "$WORK/busy" 5 8) || die "gpool submit (over-share)"
  wait_ended 60 "$over"
  "$GPOOL" show "$over" -o json | jq -c '{id, state, exit_code, enforcement}'
  "$GPOOL" logs "$over"
  "$GPOOL" logs --stderr "$over"
  if "$GPOOL" logs --stderr "$over" | grep -q "cudaMalloc failed"; then
    ok "MPS refused job $over's 8 GiB on its 4 GiB share"
  else
    bad "job $over allocated 8 GiB on a 4 GiB share (state $(state_of "$over"))"
  fi
  "$GPOOL" up --stop --data "$WORK/shared" >/dev/null 2>&1
fi

step "7. result"
if [ $failures = 0 ]; then
  echo "gpu-check: all checks passed on $(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)"
else
  echo "gpu-check: $failures check(s) failed"
fi
[ $failures = 0 ]
