"""The one Node child (``mapleenv.showdown.child.NodeChild``): bounded reads, the stderr tail
a death quotes, a one-shot exchange, and close/kill through the supervisor."""

from __future__ import annotations

import pytest

from mapleenv.showdown import find_node
from mapleenv.showdown.child import NodeChild

pytestmark = pytest.mark.integration

ECHO = "process.stdin.on('data', d => process.stdout.write(d)); process.stdin.on('end', () => {})"


class ChildError(RuntimeError):
    pass


def _child(script: str) -> NodeChild:
    return NodeChild([find_node(), "-e", script], name="test child", error=ChildError)


def test_lines_come_back_one_at_a_time_and_close_reaps() -> None:
    with _child(ECHO) as child:
        child.write(b"one\ntwo\nthr")
        assert child.reader.line(10) == b"one"
        assert child.reader.line(10) == b"two"
        child.write(b"ee\n")
        assert child.reader.line(10) == b"three"
    assert child.returncode == 0 and not child.alive()


def test_a_child_that_does_not_answer_is_an_error_at_the_deadline() -> None:
    with _child("setInterval(() => {}, 1000)") as child:
        with pytest.raises(ChildError, match="^test child gave no reply for a test in 0.2 s$"):
            child.reader.line(0.2, "a test")
        child.kill()
        assert child.returncode is not None


def test_a_death_names_the_code_and_the_last_stderr_line() -> None:
    script = "console.error('first'); console.error('Error: the cause'); process.exit(3)"
    with _child(script) as child, pytest.raises(ChildError) as caught:
        child.reader.line(30)
    first, *rest = str(caught.value).splitlines()
    assert first == f"test child (pid {child.pid}) died with code 3: Error: the cause"
    assert rest[0] == "stderr tail:" and "first" in rest


def test_communicate_returns_the_output_or_one_line_for_a_failure() -> None:
    gather = "let s = ''; process.stdin.on('data', d => { s += d });"
    with _child(gather + "process.stdin.on('end', () => process.stdout.write(s))") as child:
        assert child.communicate(b"x" * 300_000, timeout=30) == b"x" * 300_000
    script = "process.stdin.on('end', () => { console.error('bad input'); process.exit(1) })"
    failing = _child(script + "; process.stdin.resume()")
    with failing, pytest.raises(ChildError, match=r"died with code 1: bad input$"):
        failing.communicate(b"{}", timeout=30)
