#!/usr/bin/env bash
# Installs every build, test and run-time dependency of gpool from Debian packages.
# Idempotent: prints nothing and changes nothing when everything is already present.
set -euo pipefail
PKGS=(build-essential cmake pkg-config git curl ca-certificates procps psmisc
      libjansson-dev libyaml-dev libsqlite3-dev sqlite3 libmicrohttpd-dev
      libcurl4-openssl-dev prometheus jq python3 libgnutls28-dev openssl
      libpq-dev postgresql   # the PostgreSQL store; its tests start a throw-away server
      bc iproute2            # the failover chaos run: times, and the leader's sessions (ss)
      clang libclang-rt-14-dev    # the fuzz harnesses: clang and libFuzzer's runtime
      chromium chromium-driver python3-selenium    # the web console's browser test
      msmtp python3-aiosmtpd    # notifications' test: a sendmail relaying to an SMTP sink
      nginx-light               # services' test: a balancer fed by `gpool service endpoints`
      python3-pytest python3-venv python3-pip   # the Python client's tests, pip install offline
      python3-pexpect                           # interactive sessions driven on a PTY (tests/e2e/session_pty_test.sh)
      openmpi-bin libopenmpi-dev   # mpirun inside a job, launching through srun (mpi_test)
      podman runc docker-registry busybox-static apache2-utils   # jobs in images, a local registry
      skopeo)                                     # and a test image (tests/e2e/container_test.sh);
                                                  # skopeo reads a pull's total (its progress)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "setup: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
