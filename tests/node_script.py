"""Run a Node script against the pinned simulator and Maple's search modules (tests of the
search's JavaScript on real battles)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from mapleenv.search.host import SEARCH_SCRIPT
from mapleenv.showdown import find_node, find_showdown

JS = SEARCH_SCRIPT.parent


def run_node_script(template: str, *modules: str, timeout: float = 240) -> dict[str, Any]:
    """``node -e template``, its ``%(load)s`` and ``%(showdown)s`` the simulator loader and
    package, each ``%(name)s`` of ``modules`` the path of ``mapleenv/js/search/<name>.js``
    (as JSON strings); the last line it prints, read as JSON."""
    paths = {"load": JS / "load_sim.js", "showdown": find_showdown()}
    paths |= {name: JS / "search" / f"{name}.js" for name in modules}
    script = template % {name: json.dumps(str(path)) for name, path in paths.items()}
    result = subprocess.run(
        [find_node(), "-e", script], capture_output=True, text=True, timeout=timeout, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])
