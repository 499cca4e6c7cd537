#!/usr/bin/env bash
# Idempotent set-up: a venv in .venv with Maple and its Python deps, and the pinned
# pokemon-showdown npm package in node_modules. Safe to run again.
#   TORCH_SPEC  torch requirement installed first (default torch==2.13.0, a CPU wheel here;
#               set e.g. TORCH_SPEC="torch" for your platform's default CUDA build). When
#               set and the installed torch does not match it, torch is replaced (one line
#               says so; scripts/torch_spec.py decides); unset, an installed torch is kept.
#               See docs/gpu.md.
#   EXTRAS      pip extras for Maple (default "dev"; "dev,ray" for the Ray scale-out)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_REQUESTED=${TORCH_SPEC:+--requested}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
EXTRAS=${EXTRAS:-dev}

command -v node >/dev/null || { echo "error: Node.js 18+ is required (https://nodejs.org)" >&2; exit 1; }
node -e 'process.exit(parseInt(process.versions.node) >= 18 ? 0 : 1)' \
  || { echo "error: Node.js 18+ is required, found $(node --version)" >&2; exit 1; }

[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
IFS=$'\t' read -r torch_action torch_note < <(python scripts/torch_spec.py $TORCH_REQUESTED "$TORCH_SPEC")
case "$torch_action" in
  install) echo "maple: $torch_note"; python -m pip install -q "$TORCH_SPEC" ;;
  replace) echo "maple: $torch_note"
           python -m pip uninstall -q -y torch && python -m pip install -q "$TORCH_SPEC" ;;
  keep) ;;
  *) exit 1 ;;  # torch_spec.py printed the error
esac
python -m pip install -q -e ".[$EXTRAS]"

if [ ! -f node_modules/pokemon-showdown/package.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --omit=optional --ignore-scripts --no-audit --no-fund
fi
echo "maple: set up (.venv, node_modules/pokemon-showdown $(node -p 'require("./node_modules/pokemon-showdown/package.json").version'))"
