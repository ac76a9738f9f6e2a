#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A provider (docs/providers.md) for the end-to-end tests: `create` "starts machines" by
# starting real `gpool agent` processes with simulated GPUs on 127.0.0.1, `delete` stops
# them, `list` reports those alive. Everything it needs comes through the template's `env`:
#   PA_DIR      a directory for its state (pid files, the call log calls.log)
#   PA_GPOOL    the gpool binary;  PA_URL_FILE  the server's server.url;  PA_TOKEN  an agent token
#   PA_SIM      the agents' --sim spec (e.g. 2xH100-80GB);  PA_CAPACITY  their --capacity
#   PA_FAIL     answer every create with this error class (e.g. capacity)
#   PA_NOSTART  1: answer create but start nothing (the node never registers)
#   PA_NODE     answer every created instance with this node name (a provider that
#               misbehaves: its agent is started once, the other instances are only named)
# The agents run in sessions of their own, so they outlive the call's process group.
req=$(cat)
echo "$(date +%s.%N) $GPOOL_TEMPLATE $1 $(printf '%s' "$req" | jq -c '{count, instances, idempotency_key}')" >>"$PA_DIR/calls.log"
alive() { [ -f "$PA_DIR/$1.pid" ] && kill -0 "$(cat "$PA_DIR/$1.pid")" 2>/dev/null; }
case "$1" in
list)
  out=''
  for f in "$PA_DIR/$GPOOL_TEMPLATE"-*.pid; do
    [ -f "$f" ] || continue
    n=$(basename "$f" .pid)
    alive "$n" && out="$out${out:+,}{\"id\": \"$n\", \"node\": \"$n\"}"
  done
  echo "{\"instances\": [$out]}" ;;
create)
  if [ -n "${PA_FAIL:-}" ]; then
    echo "{\"error\": {\"class\": \"$PA_FAIL\", \"message\": \"no $PA_SIM left here\"}}"
    exit 1
  fi
  count=$(printf '%s' "$req" | jq .count)
  url=$(head -n1 "$PA_URL_FILE")
  out=''
  i=0
  while [ "$i" -lt "$count" ]; do
    k=$(( $(cat "$PA_DIR/seq" 2>/dev/null || echo 0) + 1 ))
    echo "$k" >"$PA_DIR/seq"
    n="$GPOOL_TEMPLATE-$k"
    id=$n
    n=${PA_NODE:-$n}
    if [ "${PA_NOSTART:-}" != 1 ] && ! alive "$n"; then
      mkdir -p "$PA_DIR/agent-$n"
      setsid "$PA_GPOOL" agent --server "$url" --token "$PA_TOKEN" --name "$n" --sim "$PA_SIM" \
        --data "$PA_DIR/agent-$n" --personal --heartbeat-s 1 --capacity "${PA_CAPACITY:-on-demand}" </dev/null >>"$PA_DIR/agent-$n.log" 2>&1 &
      pid=$!
      echo "$pid" >"$PA_DIR/$n.pid"
      # Answer only once the agent leads a session of its own: the call's process group is
      # killed when the call ends.
      j=0
      while [ "$(awk '{print $6}' "/proc/$pid/stat" 2>/dev/null)" != "$pid" ] && [ $j -lt 100 ]; do
        sleep 0.02
        j=$((j + 1))
      done
    fi
    out="$out${out:+,}{\"id\": \"$id\", \"node\": \"$n\"}"
    i=$((i + 1))
  done
  echo "{\"instances\": [$out]}" ;;
delete)
  for n in $(printf '%s' "$req" | jq -r '.instances[]'); do
    if alive "$n"; then
      pid=$(cat "$PA_DIR/$n.pid")
      kill -TERM "$pid"
      j=0
      while kill -0 "$pid" 2>/dev/null && [ $j -lt 50 ]; do sleep 0.1; j=$((j + 1)); done
      kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$PA_DIR/$n.pid"
  done
  printf '%s' "$req" | jq -c '{deleted: .instances}' ;;
*)
  echo '{"error": {"class": "invalid", "message": "unknown verb"}}'
  exit 1 ;;
esac
