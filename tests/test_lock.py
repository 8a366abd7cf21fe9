"""The dependency lock: pyproject.toml holds ranges, constraints.txt one exact set inside them,
and the environment the tests run in is that set (scripts/bootstrap.sh installs it). The
worker image recipe (docker/worker.Dockerfile) builds on the locked Beam and Python."""

from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
OWN = {"medsimp", "pip", "wheel"}  # pip: bootstrap upgrades it; wheel: absent from a fresh venv


def locked() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: not an exact pin: {line!r}"
            pins[canonicalize_name(name)] = Version(version)
    return pins


def requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    return [Requirement(r) for r in project["dependencies"] + [r for rs in extras.values() for r in rs]]


def test_pyproject_holds_ranges_and_the_lock_is_inside_them():
    pins = locked()
    for req in requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is in pyproject.toml but not in constraints.txt"
        assert pins[name] in req.specifier, f"constraints.txt's {name}=={pins[name]} is outside {req}"
        assert not str(req.specifier).startswith("=="), f"pyproject.toml pins {req} exactly: give a range"


def test_the_environment_is_the_lock():
    """What `make test` runs on is constraints.txt, no more, no less (local labels such as
    torch's `+cpu` aside). Only a CPU build of torch satisfies it: PyPI's default build brings
    CUDA packages the lock does not name (docs/STACK.md)."""
    pins = locked()
    installed = {
        canonicalize_name(d.metadata["Name"]): Version(d.version)
        for d in metadata.distributions()
        if canonicalize_name(d.metadata["Name"]) not in OWN
    }
    drift = {
        name: (str(pins.get(name)), str(installed.get(name)))
        for name in pins.keys() | installed.keys()
        if name not in pins or name not in installed or Version(installed[name].public) != pins[name]
    }
    assert not drift, f"environment vs constraints.txt (locked, installed): {drift}"


def test_worker_image_is_built_on_the_locked_beam_and_python():
    text = (ROOT / "docker" / "worker.Dockerfile").read_text(encoding="utf-8")
    base = re.search(r"^FROM apache/beam_python(\d+)\.(\d+)_sdk:(\S+)$", text, re.M)
    assert base, "docker/worker.Dockerfile: no FROM apache/beam_pythonX.Y_sdk:VERSION line"
    assert (int(base[1]), int(base[2])) == sys.version_info[:2]
    assert Version(base[3]) == locked()["apache-beam"]
    assert "-c /opt/medsimp/constraints.txt" in text


def test_worker_image_context_is_what_it_copies_and_nothing_else():
    """`docker build .` would otherwise send .venv, out/ and the DVC cache (derived corpus data)
    to the daemon: the .dockerignore beside the Dockerfile admits only what COPY names."""
    import fnmatch

    text = (ROOT / "docker" / "worker.Dockerfile").read_text(encoding="utf-8")
    copied = [src for line in re.findall(r"^COPY (.+)$", text, re.M) for src in line.split()[:-1]]
    rules = [
        ln.strip()
        for ln in (ROOT / "docker" / "worker.Dockerfile.dockerignore")
        .read_text(encoding="utf-8")
        .splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert rules[0] == "*", "the .dockerignore must exclude everything first"
    allowed = [r[1:] for r in rules[1:] if r.startswith("!")]
    assert copied and all(any(fnmatch.fnmatch(src, pat) for pat in allowed) for src in copied)
    assert all(any(fnmatch.fnmatch(src, pat) for src in copied) for pat in allowed), (
        "admits what no COPY uses"
    )
