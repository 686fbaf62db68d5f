#!/bin/sh
# Installs Debian's Chromium for the browser tests (test/node/ui-browser.test.ts runs this when no
# Chromium is found). Non-interactive; needs root, as on CI and the project's machines. Nothing is
# downloaded from a browser vendor: only Debian's package archive is used.
set -eu
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != "0" ]; then
  echo "install-chromium: run as root, or install Chromium yourself (Debian: apt-get install chromium) and set CHROMIUM_PATH" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium
