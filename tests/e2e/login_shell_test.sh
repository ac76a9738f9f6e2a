#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A Slurm script that starts `#!/bin/bash -l` (NERSC's and many centres' guides) runs a
# login shell, whose /etc/profile sets PATH anew (Debian's does): the job's Slurm commands
# (srun, scontrol) must still be found, through the BASH_ENV the agent gives every job
# (docs/slurm.md); a job's own BASH_ENV still runs after it, and steps see the same.
source "$(dirname "$0")/lib.sh"
e2e_init
e2e_server
e2e_agent n2 2xH100-80GB --listen 127.0.0.2:0
export GPOOL_TOKEN=$ADMIN_TOKEN
[ -r /etc/profile ] && grep -q '^ *PATH=' /etc/profile ||
  echo "note: this machine's /etc/profile does not set PATH; the test still checks BASH_ENV" >&2

echo 'export MINE=from-my-bash-env' >mine.sh
cat >login.sh <<SH
#!/bin/bash -l
#SBATCH -J login
#SBATCH -N 1
echo "srun=\$(command -v srun) scontrol=\$(command -v scontrol) mine=\$MINE" >$E2E_DIR/batch.out
scontrol show hostnames "\$SLURM_JOB_NODELIST" >$E2E_DIR/hosts.out
srun bash -l -c 'echo "step \$SLURM_PROCID \$(command -v scontrol)"' >$E2E_DIR/step.out
SH
id=$("$GPOOL" submit -e BASH_ENV="$E2E_DIR/mine.sh" login.sh) || fail "submit login.sh: $id"
wait_for 90 "job $id to end" sh -c "'$GPOOL' show $id -o json | jq -e '.state | test(\"completed|failed|cancelled\")'"
expect_eq completed "$(job_field "$id" .state)" "the login-shell script completes ($("$GPOOL" logs "$id" 2>&1 | tail -n 5))"
bin="$E2E_DIR/agent-n2/bin"
expect_eq "srun=$bin/srun scontrol=$bin/scontrol mine=from-my-bash-env" "$(cat batch.out)" \
  "a login shell finds the job's srun and scontrol, and the job's own BASH_ENV ran"
expect_eq n2 "$(cat hosts.out)" "scontrol show hostnames in a login shell"
expect_eq "step 0 $bin/scontrol" "$(cat step.out)" "a step's login shell finds them too"
echo "PASS: login shells in jobs keep the Slurm commands"
