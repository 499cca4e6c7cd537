"""The offline replay viewer (``mapleenv/js/replay_view.js``) against log lines a server
chose (issue 61): a line whose kind is an ``Object.prototype`` member (``|valueOf|``,
``|__proto__|``, ``|player|constructor|x``) must not blank the page, and
``|player|__proto__|x`` must not reach the page's prototypes. Run in Node over a minimal
stand-in for the DOM the viewer uses (``createElement``, ``append``, ``textContent``): the
script's logic, not a browser's rendering (tests/mapleenv/test_replay_viewer.py has that)."""

from __future__ import annotations

import json
import subprocess

import pytest

from mapleenv.replays import offline_viewer
from mapleenv.showdown import find_node

LINES = [
    "|player|p1|maple|",
    "|player|p2|rival|",
    "|valueOf|",
    "|__proto__|",
    "|constructor|x",
    "|hasOwnProperty|x",
    "|player|constructor|x",
    "|player|__proto__|polluted",
    "|teamsize|__proto__|6",
    "|-sidestart|__proto__: x|move: Spikes",
    "|switch|p1a: Pika|Pikachu, L50|1e999/100",
    "|switch|p2a: Eevee|Eevee, L50|100/100",
    "|-status|p1a: Pika|constructor",
    "|-boost|p1a: Pika|__proto__|2",
    "|-boost|p1a: Pika|atk|2",
    "|turn|1",
    "|win|maple",
]

DOM = r"""
const texts = [];
class Node {
  constructor(tag) { this.tag = tag; this.children = []; this.style = {}; this.className = ""; }
  append(...c) {
    for (const x of c) { if (typeof x === "string") texts.push(x); this.children.push(x); }
  }
  prepend(...c) { this.children.unshift(...c); }
}
const root = new Node("div");
const data = { textContent: %(log)s };
const extra = { textContent: %(extra)s };
global.document = {
  createElement: (tag) => new Node(tag),
  getElementById: (id) => (id === "maple-replay" ? root : null),
  querySelector: (q) => (q === "script.battle-log-data" ? data
    : q === "script.maple-replay-data" ? extra : null),
};
let error = null;
try { %(viewer)s } catch (e) { error = String(e); }
const probe = {};
console.log(JSON.stringify({
  error, sections: root.children.length, texts,
  polluted: probe.name !== undefined || probe.size !== undefined || "mons" in probe,
}));
"""


@pytest.mark.integration
def test_hostile_line_kinds_neither_blank_the_viewer_nor_pollute_prototypes() -> None:
    script = DOM % {
        "log": json.dumps("\n".join(LINES)),
        "extra": json.dumps(json.dumps({"side": "p1", "team": ["Pika"], "decisions": []})),
        "viewer": offline_viewer(),
    }
    proc = subprocess.run(
        [find_node(), "-e", script], capture_output=True, text=True, timeout=60, check=True
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["error"] is None, result["error"]
    assert result["sections"] >= 3 and not result["polluted"], result
    text = " ".join(result["texts"])
    assert "maple won the battle!" in text and "Infinity" not in text and "NaN" not in text
    assert "native code" not in text  # no Object.prototype function printed as a status
    assert "Pika's Attack rose sharply!" in text
