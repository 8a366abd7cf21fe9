#!/usr/bin/env bash
# Install everything medsimp needs from this repo's own files:
#   system packages (Java for METEOR 1.5, npm for the plots' Vega; with --tests also Chromium for
#   the browser tests: `make repro` does not wait for it),
#   a Python 3.11 virtual environment in .venv with the exact dependency set of constraints.txt
#   (pyproject.toml's ranges, one verified point in them), and the pinned
#   Vega scripts in node_modules (package-lock.json) that render `dvc plots show` offline.
# Safe to re-run; it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

tests=0
case "$#:${1:-}" in
  1:--tests) tests=1 ;;
  0:) ;;
  *) echo "usage: bash scripts/bootstrap.sh [--tests]" >&2; exit 2 ;;
esac

PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), "medsimp needs Python 3.11"'

need_apt=()
command -v java >/dev/null 2>&1 || need_apt+=(default-jre-headless)
if [ "$tests" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
fi
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing system packages: ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
  else
    echo "bootstrap: please install ${need_apt[*]} (METEOR needs Java; plots need npm; with --tests, browser tests need Chromium)" >&2
  fi
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.medsimp-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints.txt -nt "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -c constraints.txt -e ".[refresh,eval,datasets,test]"
  touch "$stamp"
fi
if command -v npm >/dev/null 2>&1 && { [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; }; then
  npm ci --no-audit --no-fund --ignore-scripts --silent
  touch node_modules
fi
echo "bootstrap: ready (.venv, node_modules)"
