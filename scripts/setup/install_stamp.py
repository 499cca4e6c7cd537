"""Print the stamp of Maple's editable install: Python version, extras, and a digest of
what in pyproject.toml the install depends on (build-system, project, tool.setuptools).

scripts/setup.sh reinstalls Maple only when this differs from the stamp it wrote last
(``.venv/.maple-install``), so editing tool settings (ruff, pytest, import-linter) or
running setup again reinstalls nothing.

    python scripts/setup/install_stamp.py dev,ray
"""

from __future__ import annotations

import hashlib
import json
import sys
import tomllib
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # scripts/: the shared _cli (last)
from _cli import script_parser  # noqa: E402

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def stamp(extras: str, pyproject: Path = PYPROJECT) -> str:
    """``"<python version> <extras> <sha256>"``."""
    data = tomllib.loads(pyproject.read_text())
    install = {
        "build-system": data.get("build-system"),
        "project": data.get("project"),
        "setuptools": data.get("tool", {}).get("setuptools"),
    }
    digest = hashlib.sha256(json.dumps(install, sort_keys=True).encode()).hexdigest()
    return f"{sys.version.split()[0]} {extras} {digest}"


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("extras", help="the pip extras installed, e.g. dev or dev,ray")
    args = parser.parse_args(argv)
    print(stamp(args.extras))
    return 0


if __name__ == "__main__":
    sys.exit(main())
