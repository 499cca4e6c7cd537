"""A Node child running ``mapleenv/js/search_host.js``: decision-time search for one process.

One JSON object a line each way (the script's docstring has the protocol). The child dies
with its parent (stdin EOF and ``PR_SET_PDEATHSIG``); a reply that does not come within
``timeout`` seconds, or a dead child, is a :class:`SearchHostError`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mapleenv.showdown import find_node, find_showdown
from mapleenv.showdown.child import NodeChild
from mapleenv.showdown.snapshot import node_command

SEARCH_SCRIPT = Path(__file__).resolve().parents[1] / "js" / "search_host.js"


class SearchHostError(RuntimeError):
    """The search host is missing, died, hung, or refused a request."""


class SearchRefused(SearchHostError):
    """The host answered a request with an error (a view it cannot build a world from):
    that request failed, the host serves on."""


class SearchHost(NodeChild):
    """One ``node search_host.js`` child; requests are answered one at a time, in order."""

    def __init__(self, timeout: float = 30.0, showdown_dir: str | os.PathLike | None = None):
        self.timeout = timeout
        showdown = Path(showdown_dir) if showdown_dir is not None else find_showdown()
        cmd = node_command(find_node(), SEARCH_SCRIPT, showdown)
        try:
            super().__init__(cmd, name="search host", error=SearchHostError)
        except OSError as exc:
            raise SearchHostError(f"cannot start the search host: {exc}") from exc
        self._next_id = 0
        self._pending = ""

    def request(self, cmd: str, **fields: Any) -> dict[str, Any]:
        """Send one request; its reply (``SearchHostError`` on an error reply)."""
        self.submit(cmd, **fields)
        return self.collect()

    def submit(self, cmd: str, **fields: Any) -> None:
        """Send one request without waiting: :meth:`collect` reads its reply, so several
        hosts can search side by side."""
        self._next_id += 1
        self._pending = cmd
        line = json.dumps({"id": self._next_id, "cmd": cmd, **fields}) + "\n"
        self.write(line.encode())

    def collect(self) -> dict[str, Any]:
        """The reply to the last :meth:`submit` (``SearchHostError`` on an error reply)."""
        while True:
            reply = json.loads(self.reader.line(self.timeout))
            if reply.get("id") == self._next_id:
                break
        if "error" in reply:
            raise SearchRefused(f"search host refused {self._pending}: {reply['error']}")
        return reply
