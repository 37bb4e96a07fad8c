#!/bin/sh
# deps.sh: installs every build and test dependency of reagent on
# Debian/Ubuntu with apt-get. Safe to run again.
set -e

pkgs="build-essential pkg-config
      libevent-dev libcurl4-openssl-dev libmsgpack-dev libhiredis-dev
      libjansson-dev libcmocka-dev libglib2.0-dev libssl-dev libpcre2-dev
      libmimalloc-dev
      redis-server clang curl jq python3 tzdata bsdutils
      python3-yaml logrotate procps iproute2 systemd"

if [ "$(id -u)" -ne 0 ]; then
    sudo=sudo
else
    sudo=
fi

export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
# shellcheck disable=SC2086
$sudo apt-get install -y -q --no-install-recommends $pkgs

# libFuzzer's runtime for `make fuzz` (named so on Debian 12; elsewhere
# clang may bring it itself)
$sudo apt-get install -y -q --no-install-recommends libclang-rt-dev \
    2>/dev/null || true

# Node and npm, to install the interop tests' packages (the tests run on
# the Node pinned in tests/interop/package.json, so any Node that npm runs
# on will do); only when npm is missing, since a Node from elsewhere
# brings its own npm and may conflict with Debian's npm package
if ! command -v npm >/dev/null 2>&1; then
    $sudo apt-get install -y -q --no-install-recommends nodejs npm
fi

# the interop tests' pinned npm packages and Node (tests/interop/), as
# the owner of the work tree (so that `sudo deploy/deps.sh` leaves no
# root-owned node_modules behind); skipped when the installed tree is the
# one package-lock.json pins
interop=$(cd "$(dirname "$0")/../tests/interop" && pwd)
if cmp -s "$interop/package-lock.json" "$interop/node_modules/.rg-lock" &&
   "$interop/run.sh" --check 2>/dev/null
then
    echo "deps.sh: tests/interop/node_modules is up to date"
else
    as_owner=
    uid=$(stat -c %u "$interop")
    if [ "$(id -u)" -eq 0 ] && [ "$uid" -ne 0 ] &&
       entry=$(getent passwd "$uid")
    then
        as_owner="runuser -u $(echo "$entry" | cut -d: -f1) --"
        as_owner="$as_owner env HOME=$(echo "$entry" | cut -d: -f6)"
    fi
    echo "deps.sh: npm ci in tests/interop (npm's EBADENGINE warnings name" \
         "the Node that npm runs on, not the pinned one the tests use)"
    (cd "$interop" &&
     $as_owner npm ci --ignore-scripts --no-audit --no-fund &&
     $as_owner cp package-lock.json node_modules/.rg-lock)
    "$interop/run.sh" --check
fi
