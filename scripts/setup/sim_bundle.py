#!/usr/bin/env python
"""Pack what the direct backend's simulator needs into one compressed file, for a machine
with no network (the GPU check's: at most 64 MiB travel with a command).

    python scripts/setup/sim_bundle.py shared/sim_bundle.tar.xz            # the package only
    python scripts/setup/sim_bundle.py shared/sim_bundle.tar.xz --node     # and this node binary

The bundle holds ``node_modules/pokemon-showdown`` less what the simulator does not read
(sources, the server's sources, translations, tools, source maps) and its one runtime
dependency ``node_modules/ts-chacha20``; with ``--node``, ``bin/node`` too. On the other
machine, from the repository root:

    tar xJf sim_bundle.tar.xz                       # node_modules/ (and bin/node)
    export PATH=$PWD/bin:$PATH                       # only if Node is not installed there

Maple finds ``node_modules/pokemon-showdown`` in the repository root by itself (or set
``MAPLE_SHOWDOWN_DIR``). The direct backend (simulator hosts), team reading and format
checks work from it; the server backend (a Showdown server) needs the full package.
Prints one JSON line: the bundle's size, the uncompressed size and the file count.
"""

from __future__ import annotations

import shutil
import sys
import tarfile
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import print_json, script_parser  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path("node_modules/pokemon-showdown")
KEEP = ["package.json", "pokemon-showdown", "dist/sim", "dist/data", "dist/lib"]
KEEP += ["dist/config", "dist/server"]  # formats; dist/server marks the package as found
DEPENDENCIES = [Path("node_modules/ts-chacha20")]


def wanted(path: Path) -> bool:
    return not path.name.endswith(".map") and path.is_file()


def members(root: Path) -> list[tuple[Path, str]]:
    """(file, its name in the bundle) of everything the bundle holds."""
    files: list[tuple[Path, str]] = []
    for keep in KEEP:
        source = root / PACKAGE / keep
        found = [source] if source.is_file() else sorted(source.rglob("*"))
        files += [(f, str(f.relative_to(root))) for f in found if wanted(f)]
    for dependency in DEPENDENCIES:
        found = sorted((root / dependency).rglob("*"))
        files += [(f, str(f.relative_to(root))) for f in found if wanted(f)]
    return files


def build(out: Path, root: Path, node: str | None, preset: int) -> dict:
    files = members(root)
    if node is not None:
        files.append((Path(node).resolve(), "bin/node"))
    raw = sum(f.stat().st_size for f, _ in files)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, "w:xz", preset=preset) as tar:
        for path, name in files:
            tar.add(str(path), arcname=name, recursive=False)
    size = out.stat().st_size
    return {
        "bundle": str(out),
        "bundle_mib": round(size / 2**20, 1),
        "uncompressed_mib": round(raw / 2**20, 1),
        "files": len(files),
        "node": node,
        "fits_64_mib": size <= 64 * 2**20,
    }


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("out", type=Path, help="the bundle to write (.tar.xz)")
    parser.add_argument("--node", action="store_true", help="include the node on PATH")
    parser.add_argument("--preset", type=int, default=9, help="xz preset 0-9 (default 9)")
    parser.add_argument("--root", type=Path, default=REPO, help="the checkout to pack from")
    args = parser.parse_args(argv)
    if not (args.root / PACKAGE / "dist" / "sim").is_dir():
        print(f"sim_bundle.py: no {PACKAGE}/dist/sim under {args.root}", file=sys.stderr)
        return 2
    node = shutil.which("node") if args.node else None
    if args.node and node is None:
        print("sim_bundle.py: --node: no node on PATH", file=sys.stderr)
        return 2
    print_json(build(args.out, args.root, node, args.preset))
    return 0


if __name__ == "__main__":
    sys.exit(main())
