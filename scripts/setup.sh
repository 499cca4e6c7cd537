#!/usr/bin/env bash
# Idempotent set-up: a venv in .venv with Maple and its Python deps, and the pinned
# pokemon-showdown npm package in node_modules. Safe to run again: quiet (one line) when
# nothing changed.
#   TORCH_SPEC  torch requirement installed first (default torch==2.13.0, a CPU wheel here;
#               set e.g. TORCH_SPEC="torch" for your platform's default CUDA build). When
#               set and the installed torch does not match it, torch is replaced (one line
#               says so; scripts/setup/torch_spec.py decides); unset, an installed torch is kept.
#               See docs/gpu.md.
#   EXTRAS      pip extras for Maple (default "dev"; "dev,ray" for the Ray scale-out; "engine"
#               needs no naming: the engine step below installs it either way)
#   MAPLE_ENGINE=0  skips the engine step: poke-engine (gen 9), from the machine's wheel cache
#               or built once (python -m mapleenv.engine.install --setup; docs/architecture.md,
#               "The engine"); quiet when installed, one warning line when it cannot build
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_REQUESTED=${TORCH_SPEC:+--requested}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
EXTRAS=${EXTRAS:-dev}
# the engine extra is the engine step's job (pip alone would build the wrong generation)
PIP_EXTRAS=$(echo ",$EXTRAS," | sed 's/,engine,/,/g; s/^,//; s/,$//')

command -v node >/dev/null || { echo "error: Node.js 18+ is required (https://nodejs.org)" >&2; exit 1; }
node -e 'process.exit(parseInt(process.versions.node) >= 18 ? 0 : 1)' \
  || { echo "error: Node.js 18+ is required, found $(node --version)" >&2; exit 1; }

[ -x .venv/bin/python ] || "$PY" -m venv .venv
. .venv/bin/activate
# The editable install of Maple is redone only when what it depends on changed (the Python,
# the extras, pyproject.toml's project metadata): a second run with nothing changed prints
# one line.
STAMP=.venv/.maple-install
want_stamp=$(python scripts/setup/install_stamp.py "$EXTRAS")
need_install=1
if [ "$(cat "$STAMP" 2>/dev/null)" = "$want_stamp" ] \
  && python -c 'import importlib.metadata as m; m.distribution("maple")' 2>/dev/null; then
  need_install=0
fi
[ "$need_install" = 0 ] || python -m pip install -q --upgrade pip
# pip compiles each package's bytecode on one core as it installs (34 of the 45 s torch takes
# on a 2-core box); installed with --no-compile, everything is compiled once at the end on
# every core (compileall -j 0), as pip would have (timestamped .pyc files, errors ignored)
PIP_INSTALL=(python -m pip install -q --no-compile)
to_compile=0
IFS=$'\t' read -r torch_action torch_note < <(python scripts/setup/torch_spec.py $TORCH_REQUESTED "$TORCH_SPEC")
case "$torch_action" in
  install) echo "maple: $torch_note"; "${PIP_INSTALL[@]}" "$TORCH_SPEC"; to_compile=1 ;;
  replace) echo "maple: $torch_note"
           python -m pip uninstall -q -y torch && "${PIP_INSTALL[@]}" "$TORCH_SPEC"; to_compile=1 ;;
  keep) ;;
  *) exit 1 ;;  # torch_spec.py printed the error
esac
if [ "$need_install" = 1 ]; then
  # setuptools' "Editable installation" notice is information, not a problem: not shown
  PYTHONWARNINGS="${PYTHONWARNINGS:+$PYTHONWARNINGS,}ignore:Editable installation" \
    "${PIP_INSTALL[@]}" -e ".${PIP_EXTRAS:+[$PIP_EXTRAS]}"
  to_compile=1
  echo "$want_stamp" > "$STAMP"
fi

# Maple's own modules too (quick when their .pyc files are current): where the environment
# sets PYTHONDONTWRITEBYTECODE, Python never writes them, and every process (each env worker,
# CLI run and test command) would compile Maple anew, ~0.9 s of CPU for the training stack.
# Beside npm, which mostly waits on the network and disk.
compile_dirs=(mapleenv trainer scripts)
[ "$to_compile" = 0 ] || compile_dirs+=("$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')")
{ python -m compileall -q -j 0 "${compile_dirs[@]}" >/dev/null 2>&1 || true; } &
compiling=$!
if [ ! -f node_modules/pokemon-showdown/package.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --omit=optional --ignore-scripts --no-audit --no-fund --loglevel=error
fi
wait "$compiling"
# The simulator's startup snapshot of this checkout's package (node_modules/.cache/maple):
# built when missing or stale, quiet otherwise (mapleenv/showdown/snapshot.py)
if [ -f node_modules/pokemon-showdown/dist/sim/index.js ]; then
  MAPLE_SHOWDOWN_DIR="$PWD/node_modules/pokemon-showdown" python -m mapleenv.showdown.install --snapshot
fi
[ "${MAPLE_ENGINE:-1}" = 0 ] || python -m mapleenv.engine.install --setup
echo "maple: set up (.venv, node_modules/pokemon-showdown $(node -p 'require("./node_modules/pokemon-showdown/package.json").version'))"
