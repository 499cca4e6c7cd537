#!/usr/bin/env bash
# Idempotent set-up: a venv in .venv with Maple and its Python deps, and the pinned
# pokemon-showdown npm package in node_modules. Safe to run again.
#   TORCH_SPEC  torch requirement installed first (default torch==2.13.0, a CPU wheel here;
#               set e.g. TORCH_SPEC="torch" for your platform's default CUDA build)
#   EXTRAS      pip extras for Maple (default "dev"; "dev,ray" for the Ray scale-out)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
EXTRAS=${EXTRAS:-dev}

command -v node >/dev/null || { echo "error: Node.js 18+ is required (https://nodejs.org)" >&2; exit 1; }
node -e 'process.exit(parseInt(process.versions.node) >= 18 ? 0 : 1)' \
  || { echo "error: Node.js 18+ is required, found $(node --version)" >&2; exit 1; }

[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -c 'import torch' 2>/dev/null || python -m pip install -q "$TORCH_SPEC"
python -m pip install -q -e ".[$EXTRAS]"

if [ ! -f node_modules/pokemon-showdown/package.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --omit=optional --ignore-scripts --no-audit --no-fund
fi
echo "maple: set up (.venv, node_modules/pokemon-showdown $(node -p 'require("./node_modules/pokemon-showdown/package.json").version'))"
