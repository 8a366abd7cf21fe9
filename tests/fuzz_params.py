"""Hostile params files and `--set` values for fuzzing (scripts/fuzz.py --params; the fast
profile runs in tests/test_params_hostile.py). The property: loading ends in typed params or
one `ParamsError` line (exit 2), never a traceback, within a time bound."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
HOLDS = ("ok", "exit2")
TIME_BOUND = 5.0  # seconds for one load in-process (the CLI adds its start-up)


def _keys() -> list[str]:
    from medsimp import params_schema

    return params_schema.all_keys()


def bomb(levels: int, width: int) -> str:
    first = ", ".join(["lol"] * width)
    parts = [f"&a0 [{first}]"] + [f"&a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


SCALARS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        [
            ".nan",
            ".inf",
            "-.inf",
            "5e-5",
            "1E400",
            "0x1F",
            "0o17",
            "~",
            "null",
            "yes",
            "no",
            "on",
            "''",
            '"\\x00"',
            "!!binary aGVsbG8=",
            "!!python/object:os.system ls",
            "2001-12-14",
            "*nope",
            "&a",
            "{",
            "[",
            "- -",
            "|",
            ">",
            "? x",
            "<<: {a: 1}",
            "%YAML 1.1",
            "---",
            "...",
        ]
    ),
    st.text(max_size=20).map(repr),
)


def values(depth: int = 3) -> st.SearchStrategy[str]:
    """YAML flow text of a value: scalars, nested lists/maps, deep nests and alias bombs."""
    leaf = st.one_of(
        SCALARS,
        st.builds(bomb, st.integers(2, 12), st.integers(2, 12)),
        st.integers(1, 400).map(lambda n: "[" * n + "]" * n),
        st.integers(1, 400).map(lambda n: "{a: " * n + "1" + "}" * n),
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
            st.dictionaries(st.sampled_from(["a", "kind", "seed", "a"]), inner, max_size=3).map(
                lambda d: "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"
            ),
        ),
        max_leaves=8,
    )


def keys() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(_keys()),
        st.sampled_from(_keys()).map(lambda k: k[:-1] if len(k) > 1 else k + "x"),  # typos
        st.text(alphabet="abcdefghij._-[]*&!", max_size=12),
    )


@st.composite
def params_files(draw) -> bytes:
    """A params file: schema keys with hostile values, duplicates, bad bytes or bad structure."""
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        key = draw(keys())
        parts = key.split(".")
        text = "".join(f"{'  ' * i}{p}:\n" for i, p in enumerate(parts[:-1]))
        text += f"{'  ' * (len(parts) - 1)}{parts[-1]}: {draw(values())}\n"
        lines.append(text)
    body = "".join(lines)
    mutate = draw(st.sampled_from(["none", "dup", "bytes", "truncate", "tabs", "top"]))
    data = body.encode("utf-8")
    if mutate == "dup" and lines:
        data += lines[0].encode("utf-8")
    elif mutate == "bytes":
        data += draw(st.binary(min_size=1, max_size=30))
    elif mutate == "truncate" and data:
        data = data[: draw(st.integers(0, len(data)))]
    elif mutate == "tabs":
        data = data.replace(b"  ", b"\t")
    elif mutate == "top":
        data = draw(values()).encode("utf-8")
    return data


@st.composite
def overrides(draw) -> list[str]:
    return [f"{draw(keys())}={draw(values())}" for _ in range(draw(st.integers(1, 3)))]


def load_case(data: bytes | None, sets: list[str]) -> str:
    """In-process: 'ok' or 'exit2' (property holds), else the exception type or 'slow'."""
    from medsimp.config import ParamsError, load_params

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "params.yaml"
        if data is not None:
            path.write_bytes(data)
        start = time.perf_counter()
        try:
            load_params(path if data is not None else Path(tmp) / "x" / "params.yaml", sets, required=False)
            outcome = "ok"
        except ParamsError as exc:
            outcome = "exit2" if "\n" not in str(exc) and len(str(exc)) < 1000 else "long-message"
        except Exception as exc:  # noqa: BLE001 - the fuzz records what broke
            outcome = type(exc).__name__
        if time.perf_counter() - start > TIME_BOUND:
            outcome = "slow"
    return outcome


# commands the params reach, each on a missing input, so a run ends right after the params load
CLI_COMMANDS = {
    "filter": ["filter", "--input", "{none}", "--output", "{out}"],
    "cochrane": ["cochrane", "--input", "{none}", "--output", "{out}"],
    "notes": ["notes", "--input", "{none}", "--output", "{out}"],
    "link": ["link", "--input", "{none}", "--output", "{out}"],
    "align": ["align", "corpus", "--input", "{none}", "--output", "{out}"],
    "build": ["build", "multicochrane", "--output", "{out}"],  # its inputs come from the params
    "evaluate": ["evaluate", "files", "--hyp", "{none}", "--ref", "{none}"],
}


def cli_case(data: bytes | None, sets: list[str], timeout: float = 60.0, command: str = "filter") -> str:
    """Through the real CLI (`medsimp --params F --set ... COMMAND` on a missing input):
    'ok'/'exit2' when it exits 0 or 2 with at most one stderr line and no traceback."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "p.yaml"
        path.write_bytes(data if data is not None else b"")
        argv = [sys.executable, "-m", "medsimp.cli", "--params", str(path)]
        argv += [f"--set={item}" for item in sets]  # `--set -x=1` would be an argparse option
        out = str(Path(tmp) / "out")
        argv += [a.format(none=str(Path(tmp) / "none"), out=out) for a in CLI_COMMANDS[command]]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        env.pop("MEDSIMP_PARAMS", None)
        try:
            res = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "hang"
    err = res.stderr.decode("utf-8", "replace")
    # params that load are announced (`medsimp filter: flag aligned ... (from X, to Y)`): not an error line
    module = importlib.import_module(f"medsimp.cli.commands.{CLI_COMMANDS[command][0]}")
    announced = (
        f"medsimp {' '.join(w for w in CLI_COMMANDS[command][:2] if not w.startswith('-'))}: {module.HELP}"
    )
    err = "\n".join(line for line in err.splitlines() if not line.startswith(announced))
    if "Traceback" in err or "internal error" in err:
        return "traceback"
    if err.strip().count("\n") > 0:
        return "multi-line"
    return {0: "ok", 2: "exit2"}.get(res.returncode, f"exit{res.returncode}")
