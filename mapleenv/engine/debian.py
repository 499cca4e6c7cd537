"""Debian's packaged crate sources, fetched without touching the system's apt state: a private
apt configuration (its own sources list for Debian sid, lists, cache and an empty status file,
all under the build cache), ``apt-get download`` and ``dpkg-deb -x``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SUITE_URL = "http://deb.debian.org/debian"
SUITE = "sid"  # unstable: the archive that packages the crate versions poke-engine needs
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")  # debian-archive-keyring
REGISTRY = Path("usr/share/cargo/registry")  # where librust-*-dev put crate sources


class DebianError(RuntimeError):
    """apt or dpkg is missing or failed: one line."""


class PrivateApt:
    """apt-get and apt-cache run against ``root`` only (``APT_CONFIG`` of its own)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config = root / "apt.conf"

    def prepare(self) -> None:
        for tool in ("apt-get", "apt-cache", "dpkg-deb"):
            if shutil.which(tool) is None:
                raise DebianError(f"{tool} is not installed (the offline build needs Debian's apt)")
        if not KEYRING.is_file():
            raise DebianError(f"{KEYRING} is missing: install the debian-archive-keyring package")
        for sub in (
            "lists/partial",
            "cache/archives/partial",
            "etc/sources.list.d",
            "etc/apt.conf.d",
            "etc/preferences.d",
        ):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "status").touch()
        (self.root / "etc" / "sources.list").write_text(
            f"deb [signed-by={KEYRING}] {SUITE_URL} {SUITE} main\n"
        )
        r = self.root
        settings = {
            "Dir::State": r,
            "Dir::State::Lists": r / "lists",
            "Dir::State::status": r / "status",
            "Dir::Cache": r / "cache",
            "Dir::Etc::SourceList": r / "etc" / "sources.list",
            "Dir::Etc::SourceParts": r / "etc" / "sources.list.d",
            "Dir::Etc::Parts": r / "etc" / "apt.conf.d",
            "Dir::Etc::PreferencesParts": r / "etc" / "preferences.d",
            "Dir::Etc::Preferences": r / "etc" / "preferences",
            "Acquire::Languages": "none",
            # sid's Release file is short-lived; a mirror or proxy cache may serve an older one
            "Acquire::Check-Valid-Until": "false",
            # root downloads straight into our folder (no _apt user that cannot write there)
            "APT::Sandbox::User": "root" if os.geteuid() == 0 else os.environ.get("USER", ""),
        }
        self.config.write_text("".join(f'{k} "{v}";\n' for k, v in settings.items() if v))

    def run(self, *args: str, cwd: Path | None = None) -> str:
        env = {**os.environ, "APT_CONFIG": str(self.config), "LC_ALL": "C"}
        done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            errors = [ln for ln in done.stderr.splitlines() if ln.startswith("E:")]
            raise DebianError(
                f"{args[0]} {args[1]} failed: {(errors or [done.stderr.strip()])[-1]}"
            )
        return done.stdout

    def update(self) -> None:
        """Fetch sid's package index (~11 MB) into the private lists."""
        self.run("apt-get", "update", "-q")

    def versions(self, packages: list[str]) -> dict[str, set[str]]:
        """``{package: available versions}`` of those the index has (``apt-cache madison``)."""
        if not packages:
            return {}
        env = {**os.environ, "APT_CONFIG": str(self.config), "LC_ALL": "C"}
        done = subprocess.run(
            ["apt-cache", "madison", *packages], env=env, capture_output=True, text=True
        )
        found: dict[str, set[str]] = {}
        for line in done.stdout.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) >= 3 and parts[2].endswith("Packages"):
                found.setdefault(parts[0], set()).add(parts[1])
        return found

    def download(self, requests: list[str], into: Path) -> list[Path]:
        """``apt-get download`` of ``requests`` (``name`` or ``name=version``) into ``into``."""
        into.mkdir(parents=True, exist_ok=True)
        before = set(into.glob("*.deb"))
        if requests:
            self.run("apt-get", "download", "-q", *requests, cwd=into)
        return sorted(set(into.glob("*.deb")) - before)


def unpack(debs: list[Path], root: Path) -> dict[str, str]:
    """Unpack ``debs`` into ``root`` (crate sources land in ``root/usr/share/cargo/registry``);
    ``{package: version}`` of what was unpacked."""
    unpacked = {}
    for deb in debs:
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
        fields = subprocess.run(
            ["dpkg-deb", "-f", str(deb), "Package", "Version"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        info = dict(line.split(": ", 1) for line in fields.splitlines() if ": " in line)
        unpacked[info["Package"]] = info["Version"]
    return unpacked
