"""mapleenv.engine.lock: the Debian crate lock that built poke-engine, read and turned into
``apt-get download`` requests."""

from __future__ import annotations

import pytest

from mapleenv.engine.lock import (
    LOCK_PATH,
    LockError,
    download_requests,
    format_lock,
    parse_lock,
    read_lock,
)


def test_the_shipped_lock_pins_the_crates_that_built() -> None:
    pins = read_lock()
    assert len(pins) == 40  # 39 crates, syn in two semver lines (2 and 3)
    assert pins["librust-pyo3-dev"].startswith("0.28.")
    assert pins["librust-rand-dev"].startswith("0.10.")
    assert {"librust-syn-2-dev", "librust-syn-dev", "librust-hashbrown-0.14-dev"} <= set(pins)


def test_comments_and_blank_lines_are_skipped() -> None:
    text = "# header\n\nlibrust-libc-dev=0.2.186-1  # libc\n  librust-rand-dev=0.10.3+ds-1\n"
    assert parse_lock(text) == {"librust-libc-dev": "0.2.186-1", "librust-rand-dev": "0.10.3+ds-1"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("librust-libc-dev 0.2.186-1\n", r"lock:1: not `librust-<crate>-dev=<version>`"),
        ("# ok\nlibc=0.2\n", r"lock:2: not"),
        ("librust-libc-dev=\n", r"lock:1: not"),
        ("librust-libc-dev=1\nlibrust-libc-dev=2\n", r"lock:2: librust-libc-dev is pinned twice"),
    ],
)
def test_a_bad_line_is_one_line_naming_it(text: str, message: str) -> None:
    with pytest.raises(LockError, match=message) as caught:
        parse_lock(text, "lock")
    assert "\n" not in str(caught.value)


def test_format_round_trips_and_keeps_the_header() -> None:
    pins = {"librust-rand-dev": "0.10.3+ds-1", "librust-libc-dev": "0.2.186-1"}
    text = format_lock(pins, "what built\nsecond line")
    assert text.startswith("# what built\n# second line\nlibrust-libc-dev=")
    assert parse_lock(text) == pins
    assert parse_lock(format_lock(read_lock(), "h")) == parse_lock(LOCK_PATH.read_text())


def test_requests_take_the_pinned_version_where_the_archive_has_it() -> None:
    pins = {"librust-a-dev": "1.0-1", "librust-b-dev": "2.0-1", "librust-c-dev": "3.0-1"}
    available = {"librust-a-dev": {"1.0-1", "1.1-1"}, "librust-b-dev": {"2.1-1"}}
    requests, moved = download_requests(pins, available)
    assert requests == ["librust-a-dev=1.0-1", "librust-b-dev"]
    assert moved == ["librust-b-dev (2.0-1 -> current)", "librust-c-dev (gone)"]
