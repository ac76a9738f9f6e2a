#!/usr/bin/env bash
# The FGD paper's workload families (Weng et al., ATC'23, figures 11-14), built from the
# default openb trace by `gpool sim frag --family`, each member run under gpool, FGD and
# BestFit on the paper's protocol (seeds 42-51, demand resampled to 130% of capacity).
# Prints one markdown table per family: mean GPU allocation (%) at 100% and 130% arrived,
# and gpool's margin over FGD.
# Usage: bench/frag_families.sh [GPOOL_BIN] [SEEDS]    (defaults build/rel/gpool, 42-51)
# Run from the repository root; about 2 minutes on one core with a Release build.
set -euo pipefail
BIN=${1:-build/rel/gpool}
SEEDS=${2:-42-51}
NODES=traces/openb/openb_node_list_gpu_node.csv
PODS=traces/openb/openb_pod_list_default.csv
SPECS=traces/openb/openb_pod_list_gpuspec33.csv

# mean at 100% and 130% arrived, as "a b"
run() {
  "$BIN" sim frag --nodes "$NODES" --pods "$PODS" --family "$1" --specs-from "$SPECS" \
    --policy "$2" --seeds "$SEEDS" -o json |
    python3 -c 'import json,sys; a=json.load(sys.stdin)["alloc_ratio"]; print("%.2f %.2f" % (a["100"]["mean"], a["130"]["mean"]))'
}

table() { # title, kind, members...
  local title=$1 kind=$2
  shift 2
  echo
  echo "$title"
  echo
  echo "| member | gpool 100% | FGD 100% | BestFit 100% | gpool 130% | FGD 130% | BestFit 130% | gpool - FGD (100% / 130%) |"
  echo "|---|---|---|---|---|---|---|---|"
  for p in "$@"; do
    read -r g1 g3 <<<"$(run "$kind:$p" gpool)"
    read -r f1 f3 <<<"$(run "$kind:$p" fgd)"
    read -r b1 b3 <<<"$(run "$kind:$p" bestfit)"
    printf '| %s:%s | %s | %s | %s | %s | %s | %s | %+.2f / %+.2f |\n' "$kind" "$p" \
      "$g1" "$f1" "$b1" "$g3" "$f3" "$b3" "$(echo "$g1 - $f1" | bc)" "$(echo "$g3 - $f3" | bc)"
  done
}

table "CPU-only pods, % of all pods (default: 13.3)" cpu 5 10 20 25
table "GPU-sharing pods, % of GPU demand (default: 28.5)" gpushare 40 60 80 100
table "Multi-GPU pods, % of GPU demand (default: 7.3)" multigpu 20 30 40 50
table "GPU pods with a GPU-type constraint, % of GPU pods (default: 0)" gpuspec 10 20 25 33
