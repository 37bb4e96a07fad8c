#!/bin/sh
# deps.sh: installs every build and test dependency of reagent on
# Debian/Ubuntu with apt-get. Safe to run again.
set -e

pkgs="build-essential pkg-config
      libevent-dev libcurl4-openssl-dev libmsgpack-dev libhiredis-dev
      libjansson-dev libcmocka-dev libglib2.0-dev libssl-dev libpcre2-dev
      redis-server clang curl"

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
