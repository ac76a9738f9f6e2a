#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A job that requeues itself (`scontrol requeue`, as a Slurm script's signal trap does) and
# then exits before its stop order reaches the agent: the agent, which no longer has the job,
# answers the stop with a `lost` report. That report is about the run the stop was for, and
# must not end the job's next run, already started on the same node when it arrives. A proxy
# between the agent and the server (requeue_race_proxy.py) fixes the order of the messages
# that a loaded machine produces now and then: the stop comes after the task's end, the
# `lost` answer during the new run. The new run's srun must run its step, and the job
# complete after two runs.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_need python3
e2e_server
"$GPOOL" slurm-shims "$E2E_DIR/sbin" >/dev/null || fail "gpool slurm-shims"
export PATH=$E2E_DIR/sbin:$PATH GPOOL_TOKEN=$ADMIN_TOKEN

# The first job of this server is job 1: the proxy watches it.
e2e_spawn "$E2E_DIR/proxy.log" python3 "$GP_SOURCE_DIR/tests/e2e/requeue_race_proxy.py" "$SERVER_URL" \
  "$ADMIN_TOKEN" 1 "$E2E_DIR/proxy.url" "$E2E_DIR/lost.sent"
wait_for 10 "the proxy to listen" test -s "$E2E_DIR/proxy.url"
PROXY_URL=$(cat "$E2E_DIR/proxy.url")
mkdir -p "$E2E_DIR/agent-n1"
e2e_spawn "$E2E_DIR/agent-n1.log" "$GPOOL" agent --server "$PROXY_URL" --token "$AGENT_TOKEN" \
  --name n1 --sim 2xH100-80GB --data "$E2E_DIR/agent-n1" --personal --heartbeat-s 1
wait_for 20 "node n1 to be up" node_is n1 up

cat >race.sh <<SH
#!/bin/bash
#SBATCH -J race
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH -o race.out
echo "run \$SLURM_RESTART_COUNT"
if [ "\$SLURM_RESTART_COUNT" = 0 ]; then
  scontrol requeue "\$SLURM_JOB_ID" || echo "scontrol failed: \$?"
  exit 0 # before the stop comes
fi
# The new run: its step once the old run's stop has been answered.
i=0; while [ ! -e '$E2E_DIR/lost.sent' ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done
srun echo "step of run \$SLURM_RESTART_COUNT"
SH
id=$(sbatch --parsable race.sh) || fail "sbatch race.sh: $id"
expect_eq 1 "$id" "the proxy watches job 1"
wait_for 60 "job $id to end" sh -c "'$GPOOL' show $id -o json | jq -e '.state | test(\"completed|failed|cancelled\")'"
test -s "$E2E_DIR/lost.sent" || fail "the agent never answered the earlier run's stop with 'lost' ($(cat race.out))"
expect_eq completed "$(job_field "$id" .state)" \
  "the late answer to the earlier run's stop left the new run alone ($(job_field "$id" .end_reason); $(tr '\n' '|' <race.out))"
expect_eq 1 "$(job_field "$id" .restarts)" "one restart"
expect_eq "run 0|run 1|step of run 1|" "$(tr '\n' '|' <race.out)" "both runs and the new run's step ran"
expect_contains "$(cat "$E2E_DIR/lost.sent")" '"order"' "the agent's answer names the stop order it answers"
echo "PASS"
