#!/usr/bin/env bash
# Installs what the bench needs beyond npm: the sqlite3 shell (Debian/Ubuntu, as root).
set -euo pipefail
if command -v sqlite3 >/dev/null 2>&1; then
  echo "sqlite3 $(sqlite3 -version | cut -d' ' -f1) already installed"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "sqlite3 is missing: run as root: apt-get update && apt-get install -y sqlite3" >&2
  exit 1
fi
apt-get update
apt-get install -y sqlite3
