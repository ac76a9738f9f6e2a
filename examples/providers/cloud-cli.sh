#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A gpool provider (docs/providers.md) that creates, deletes and lists EC2 instances with the
# AWS CLI, and tells a chat webhook with curl what it did. Not run by the tests: it needs an
# AWS account. Configure it per node template (docs/config.md, node_templates):
#
#   node_templates:
#     - name: a100-spot
#       provider: /etc/gpool/providers/cloud-cli.sh
#       model: A100-80GB
#       gpus: 8
#       capacity: spot
#       max_nodes: 8
#       env: {AWS_PROFILE: gpool, AWS_REGION: eu-west-1, LAUNCH_TEMPLATE: gpool-a100,
#             WEBHOOK_URL: "https://chat.example.org/hooks/gpu"}
#
# The launch template's user data starts the agent with the instance id as its node name:
#   gpool agent --server https://gpool.example.org --token-file /etc/gpool/agent.token \
#     --name "$(curl -s http://169.254.169.254/latest/meta-data/instance-id)"
# so the node an instance registers as is the "node" this script reports for it.
set -u
verb=${1:-}
req=$(cat)
field() { printf '%s' "$req" | jq -r "$1"; }
tmpl=$(field .template.name)

# The answer for a failed call: exit status 1 and the error object on stdout.
fail() { # CLASS MESSAGE [RETRY_AFTER]
  jq -nc --arg c "$1" --arg m "$2" --argjson r "${3:-null}" \
    '{error: {class: $c, message: $m} + (if $r == null then {} else {retry_after: $r} end)}'
  exit 1
}

# AWS error codes onto the protocol's classes.
classify() {
  case "$1" in
  *InsufficientInstanceCapacity* | *SpotMaxPriceTooLow* | *Unsupported*) echo capacity ;;
  *InstanceLimitExceeded* | *VcpuLimitExceeded* | *MaxSpotInstanceCountExceeded*) echo quota ;;
  *AuthFailure* | *UnauthorizedOperation* | *ExpiredToken* | *InvalidClientTokenId*) echo auth ;;
  *InvalidParameter* | *InvalidLaunchTemplate* | *InvalidAMIID*) echo invalid ;;
  *) echo transient ;; # throttling, 5xx, network: worth another try
  esac
}

notify() {
  [ -n "${WEBHOOK_URL:-}" ] || return 0
  jq -nc --arg t "gpool $tmpl: $1" '{text: $t}' |
    curl -fsS -m 5 -H 'Content-Type: application/json' --data-binary @- "$WEBHOOK_URL" >/dev/null 2>&1 || true
}

aws_json() { # runs aws, leaves its JSON on stdout or fails the call with a class
  if ! out=$(aws --output json "$@" 2>"${TMPDIR:-/tmp}/gpool-aws.$$"); then
    err=$(tail -c 400 "${TMPDIR:-/tmp}/gpool-aws.$$"); rm -f "${TMPDIR:-/tmp}/gpool-aws.$$"
    echo "$err" >&2
    case $(classify "$err") in
    capacity) fail capacity "$err" 300 ;;
    quota) fail quota "$err" 3600 ;;
    transient) fail transient "$err" 30 ;;
    *) fail "$(classify "$err")" "$err" ;;
    esac
  fi
  rm -f "${TMPDIR:-/tmp}/gpool-aws.$$"
  printf '%s' "$out"
}

case "$verb" in
create)
  count=$(field .count)
  # EC2 client tokens are at most 64 characters: the key's hash keeps the call idempotent.
  token=$(field .idempotency_key | sha256sum | cut -c1-64)
  market=""
  [ "$(field .template.capacity)" = spot ] && market="--instance-market-options MarketType=spot"
  # shellcheck disable=SC2086 # $market is two words or none
  out=$(aws_json ec2 run-instances --launch-template "LaunchTemplateName=$LAUNCH_TEMPLATE" \
    --min-count 1 --max-count "$count" --client-token "$token" $market \
    --tag-specifications "ResourceType=instance,Tags=[{Key=gpool-template,Value=$tmpl}]") || exit 1
  answer=$(printf '%s' "$out" | jq -c '{instances: [.Instances[] | {id: .InstanceId, node: .InstanceId}]}')
  notify "created $(printf '%s' "$answer" | jq -r '[.instances[].id] | join(", ")')"
  printf '%s\n' "$answer"
  ;;
delete)
  # shellcheck disable=SC2046 # one word per id (ids are [A-Za-z0-9._:@/-])
  out=$(aws_json ec2 terminate-instances --instance-ids $(field '.instances[]')) || exit 1
  answer=$(printf '%s' "$out" | jq -c '{deleted: [.TerminatingInstances[].InstanceId]}')
  notify "deleted $(printf '%s' "$answer" | jq -r '.deleted | join(", ")')"
  printf '%s\n' "$answer"
  ;;
list)
  out=$(aws_json ec2 describe-instances --filters "Name=tag:gpool-template,Values=$tmpl" \
    "Name=instance-state-name,Values=pending,running") || exit 1
  printf '%s' "$out" | jq -c '{instances: [.Reservations[].Instances[] |
    {id: .InstanceId, node: .InstanceId,
     capacity: (if .InstanceLifecycle == "spot" then "spot" else "on-demand" end)}]}'
  ;;
*) fail invalid "unknown verb '$verb' (create, delete or list)" ;;
esac
