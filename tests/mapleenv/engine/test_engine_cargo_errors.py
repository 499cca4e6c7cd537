"""mapleenv.engine.cargo_errors: the crate named by cargo's resolution errors (the texts are
cargo 1.95's, from `cargo generate-lockfile --offline` against Debian's crates with one crate
removed and with rand's requirement left at the sdist's 0.9)."""

from __future__ import annotations

import pytest

from mapleenv.engine.cargo_errors import Unresolved, debian_names, unresolved_crate

MISSING = """error: no matching package named `strsim` found
location searched: directory source `/tmp/pe/errtest/reg` (which is replacing registry `crates-io`)
required by package `clap_builder v4.6.7`
    ... which satisfies dependency `clap_builder = "=4.6.7"` of package `clap v4.6.7`
As a reminder, you're using offline mode (--offline) which can sometimes cause surprising \
resolution failures, if this error is too confusing you may wish to retry without `--offline`.
"""
TOO_NEW = """error: failed to select a version for the requirement `rand = "^0.9.3"`
candidate versions found which didn't match: 0.10.3
location searched: directory source `/tmp/pe/errtest/reg` (which is replacing registry `crates-io`)
required by package `poke-engine v0.0.48 (/tmp/pe/errtest/src)`
perhaps a crate was updated and forgotten to be re-vendored?
"""
OTHER = "error: could not find `Cargo.toml` in `/tmp` or any parent directory\n"


def test_a_missing_crate_is_named() -> None:
    got = unresolved_crate(MISSING)
    assert got == Unresolved("strsim", required_by="clap_builder v4.6.7")
    assert got.line() == (
        "cargo could not resolve crate `strsim` (not in Debian's packages), "
        "needed by clap_builder v4.6.7"
    )


def test_a_crate_whose_versions_do_not_fit_is_named_with_what_debian_has() -> None:
    got = unresolved_crate(TOO_NEW)
    assert got == Unresolved(
        "rand", "^0.9.3", "0.10.3", "poke-engine v0.0.48 (/tmp/pe/errtest/src)"
    )
    assert got.line().startswith(
        'cargo could not resolve crate `rand = "^0.9.3"` (Debian has 0.10.3)'
    )
    assert "\n" not in got.line()


def test_the_older_form_of_the_missing_crate_error() -> None:
    text = "error: no matching package found\nsearched package name: `windows_sys`\n"
    assert unresolved_crate(text) == Unresolved("windows_sys")


def test_other_errors_name_no_crate() -> None:
    assert unresolved_crate(OTHER) is None
    assert unresolved_crate("") is None


@pytest.mark.parametrize(
    ("crate", "requirement", "names"),
    [
        ("strsim", None, ["librust-strsim-dev"]),
        (
            "parking_lot_core",
            "^0.9.10",
            ["librust-parking-lot-core-0.9-dev", "librust-parking-lot-core-dev"],
        ),
        ("syn", "^2.0.100", ["librust-syn-2-dev", "librust-syn-dev"]),
        ("hashbrown", "=0.14.5", ["librust-hashbrown-0.14-dev", "librust-hashbrown-dev"]),
    ],
)
def test_debian_names(crate: str, requirement: str | None, names: list[str]) -> None:
    assert debian_names(crate, requirement) == names
