#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `gpool provider test`: runs one call of a config's node template as the server would and
# says what came back: the checked instances (exit 0), or the error's class and reason with
# the provider's stderr (exit 1); a template the config lacks is a usage error (exit 2).
set -uo pipefail
GPOOL=${GPOOL_BIN:?GPOOL_BIN must point at the gpool binary}
dir=$(mktemp -d /tmp/gp_provider_cli.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$dir/provider.sh" <<'SH'
#!/bin/sh
req=$(cat)
echo "called $1 in $GPOOL_TEMPLATE with REGION=$REGION" >&2
case "$1" in
list)   echo '{"instances": [{"id": "i-1", "node": "gpu-1", "price": 2.5}]}' ;;
create) echo '{"error": {"class": "capacity", "message": "no A100 left", "retry_after": 60}}'; exit 1 ;;
delete) echo "$req" | grep -q '"instances":\["i-1"\]' || exit 9
        echo '{"deleted": ["i-1"]}' ;;
esac
SH
printf '#!/bin/sh\necho not json\n' >"$dir/broken.sh"
chmod +x "$dir/provider.sh" "$dir/broken.sh"
cat >"$dir/server.yaml" <<YAML
listen: 127.0.0.1:0
node_templates:
  - {name: a100, provider: $dir/provider.sh, model: A100-80GB, gpus: 8, env: {REGION: eu-west-1}}
  - {name: bad, provider: $dir/broken.sh, model: A100-80GB, gpus: 8, timeout: 5s}
YAML
chmod 600 "$dir/server.yaml"
cfg=$dir/server.yaml

out=$("$GPOOL" provider test -c "$cfg" a100 list) || fail "list must succeed: $out"
grep -q "a100 list: ok" <<<"$out" || fail "list output: $out"
grep -q "i-1  node gpu-1  2.5 per GPU-hour" <<<"$out" || fail "list instances: $out"
grep -q "called list in a100 with REGION=eu-west-1" <<<"$out" || fail "the provider's stderr and env: $out"

out=$("$GPOOL" provider test -c "$cfg" a100 create --count 2)
[ $? = 1 ] || fail "a capacity error must exit 1: $out"
grep -q "capacity: no A100 left (retry after 60 s)" <<<"$out" || fail "create output: $out"

json=$("$GPOOL" provider test -c "$cfg" a100 delete i-1 -o json) || fail "delete must succeed: $json"
[ "$(jq -r '.deleted | join(",")' <<<"$json")" = "i-1" ] || fail "delete -o json: $json"

out=$("$GPOOL" provider test -c "$cfg" bad list)
[ $? = 1 ] || fail "a broken provider must exit 1: $out"
grep -q "broken: the provider's output (9 bytes, exit status 0) is not a JSON object" <<<"$out" \
  || fail "the broken provider's reason: $out"

out=$("$GPOOL" provider test -c "$cfg" nope list 2>&1)
[ $? = 2 ] || fail "an unknown template must exit 2: $out"
grep -q "has no node template nope" <<<"$out" || fail "unknown template message: $out"
out=$("$GPOOL" provider test -c "$cfg" a100 reboot 2>&1)
[ $? = 2 ] || fail "an unknown verb must exit 2: $out"
echo "ok: provider test"
