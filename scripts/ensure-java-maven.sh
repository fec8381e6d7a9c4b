#!/usr/bin/env bash
# Java 17+ and Maven: installed from Debian when missing and running as root; otherwise one
# line saying what to install.
set -euo pipefail

java_major() {
  local java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
  command -v "$java" >/dev/null 2>&1 || { echo 0; return; }
  "$java" -version 2>&1 | sed -nE 's/.*version "(1\.)?([0-9]+).*/\2/p' | head -1
}

missing=()
[ "$(java_major)" -ge 17 ] 2>/dev/null || missing+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} from Debian" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  exit 0
fi
echo "make setup: ${missing[*]} missing: install Java 17+ and Maven (Debian: sudo apt-get install ${missing[*]})" >&2
exit 2
