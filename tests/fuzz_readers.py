"""Mutation strategies and the hostile-suite property for the source readers.

Shared by tests/test_fuzz_readers.py (fast profile, CI) and scripts/fuzz.py (long profile).
A valid sample per reader, every text carrying `MARKER`, is mutated byte by byte (insert,
replace, delete hostile bytes) or field by field (a value or key replaced by a hostile one,
a member repeated), written to a temp folder and run through `medsimp.cli.app.main`.
`run_case` classifies the outcome: `ok` (counts reconcile) and `exit2` (one line) hold the
property; `traceback`, `hang`, `unreconciled`, `leak` and `crash` (any other exit) break it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
MARKER = "QQLEAKMARKERQQ"
HANG_SECONDS = 120


def _review(doi: str, language: str) -> dict:
    obj = {
        "doi": doi,
        "version": 2,
        "language": language,
        "title": f"Title {MARKER}",
        "abstract": [
            {"heading": "Main results", "text": f"We found {MARKER} in 2 trials (RR 0.5). It helped."}
        ],
        "pls": [{"heading": "", "text": f"Plain {MARKER} words. It helped."}],
    }
    if language != "en":
        del obj["abstract"]
    return obj


def _pair(i: int, label: int) -> dict:
    return {
        "text": f"Sentence {i} {MARKER} here.",
        "label": label,
        "concepts": [{"range": [0, 1], "term": "Sentence", "cui": "C0000001"}],
    }


def _topic(audience: str) -> dict:
    return {
        "topic": "Asthma",
        "audience": audience,
        "title": "Asthma",
        "sections": [{"heading": "Symptoms and Signs", "text": f"Wheezing {MARKER} occurs. Cough too."}],
    }


def _entry(n: int) -> dict:
    return {
        "Title": f"T{n} {MARKER}",
        "abstract": {"1": f"First {MARKER}.", "2": f"Second {MARKER}."},
        "translation1": {"1": f"One {MARKER}. Split.", "2": ""},
        "translation2": {"1": f"Uno {MARKER}.", "2": f"Dos {MARKER}."},
    }


def _jsonl(objs: list) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objs).encode()


# reader -> (the input's name inside the temp folder, {file name: valid bytes})
SAMPLES: dict[str, tuple[str, dict[str, bytes]]] = {
    "cochrane": (
        "reviews.jsonl",
        {
            "reviews.jsonl": _jsonl(
                [
                    _review("10.1002/14651858.CD000001.pub2", "en"),
                    _review("10.1002/14651858.CD000001.pub2", "es"),
                    _review("10.1002/14651858.CD000002", "en"),
                ]
            )
        },
    ),
    "devaraj": (
        "data",
        {
            "data/val.doi": b"10.1002/14651858.CD000001.pub2\n10.1002/14651858.CD000002\n",
            "data/val.source": f"Main results: {MARKER} fell (MD -1.2). It helps.\nSecond {MARKER}. It works.\n".encode(),
            "data/val.target": f"Plain {MARKER} one. It helps.\nPlain {MARKER} two.\n".encode(),
        },
    ),
    "msd": (
        "msd",
        {
            "msd/manual.jsonl": _jsonl([_topic("professional"), _topic("consumer")]),
            "msd/msd_test.jsonl": _jsonl([_pair(1, 0), _pair(1, 1), _pair(2, 0), _pair(2, 1)]),
        },
    ),
    "plaba": (
        "plaba.json",
        {
            "plaba.json": json.dumps(
                {
                    "101": {"question": f"Q {MARKER}?", "9001": _entry(1), "9002": _entry(2)},
                    "102": {"question": "Q2?", "9003": _entry(3)},
                },
                indent=1,
            ).encode()
        },
    ),
}
COMMAND = {"cochrane": "cochrane", "devaraj": "cochrane", "msd": "msd", "plaba": "plaba"}

HOSTILE_BYTES = [
    b"\x00",
    b"\r",
    b"\n",
    b"\r\n",
    b"\xff",
    b"\xef\xbb\xbf",
    b"\xed\xa0\x80",
    b'"',
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\\",
    b"\\ud800",
    b"1e999",
    b"99999999999999999999",
    b"\xc2\x85",
    "\u2028".encode(),
    b"NaN",
    b"\t",
    b" ",
    b".pub99999999999",
]
HOSTILE_VALUES = [
    True,
    False,
    None,
    2**40,
    -1,
    0,
    2**31,
    2**63,
    1.5,
    float("nan"),
    "",
    " ",
    "\ud800",
    "²",
    "01",
    "١",
    "\x00",
    [],
    {},
    [[[[[[]]]]]],
    {"text": MARKER},
    "10.1/x.pub99999999999",
]
HOSTILE_KEYS = ["1", "01", "١", "²", " 1", "", "\ud800", "question", "translation99", "text", "label"]


@st.composite
def byte_mutation(draw, files: dict[str, bytes]) -> dict[str, bytes]:
    """Up to 4 byte edits (insert, replace, delete) in one file of the sample."""
    name = draw(st.sampled_from(sorted(files)))
    data = bytearray(files[name])
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["insert", "replace", "delete", "truncate"]))
        payload = draw(st.one_of(st.sampled_from(HOSTILE_BYTES), st.binary(min_size=1, max_size=4)))
        if op == "insert":
            data[pos:pos] = payload
        elif op == "replace":
            data[pos : pos + len(payload)] = payload
        elif op == "delete":
            data[pos : pos + draw(st.integers(1, 8))] = b""
        else:
            del data[pos:]
    return {**files, name: bytes(data)}


def _paths(value, prefix=()) -> list[tuple]:
    """Paths to every value inside a decoded JSON value (dict keys and list indexes)."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, prefix + (i,))
    return out


def _mutate_json(draw, value):
    paths = [p for p in _paths(value) if p]
    if not paths:
        return draw(st.sampled_from(HOSTILE_VALUES))
    path = draw(st.sampled_from(paths))
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    action = draw(
        st.sampled_from(["value", "key", "drop"] if isinstance(parent, dict) else ["value", "drop"])
    )
    if action == "value":
        parent[path[-1]] = draw(
            st.one_of(st.sampled_from(HOSTILE_VALUES), st.text(max_size=8), st.integers(-(2**70), 2**70))
        )
    elif action == "key":
        parent[draw(st.sampled_from(HOSTILE_KEYS))] = parent.pop(path[-1])
    else:
        del parent[path[-1]]
    return value


def _duplicate_member(text: str, draw) -> str:
    """Repeat one `"key": ` of the text just after itself, with a hostile value."""
    starts = [i for i in range(len(text)) if text.startswith('": ', i)]
    if not starts:
        return text
    at = draw(st.sampled_from(starts))
    key_start = text.rfind('"', 0, at)
    return (
        text[:key_start]
        + text[key_start:at]
        + '": '
        + json.dumps(draw(st.sampled_from(HOSTILE_VALUES)))
        + ", "
        + text[key_start:]
    )


@st.composite
def field_mutation(draw, files: dict[str, bytes]) -> dict[str, bytes]:
    """One JSON record (a line, or the PLABA file) gets a hostile value, key, dropped member
    or repeated key; a Devaraj line gets a hostile string."""
    name = draw(st.sampled_from(sorted(files)))
    text = files[name].decode()
    if name.endswith((".doi", ".source", ".target")):
        lines = text.split("\n")
        i = draw(st.integers(0, len(lines) - 1))
        lines[i] = draw(st.one_of(st.sampled_from([str(v) for v in HOSTILE_VALUES]), st.text(max_size=12)))
        return {**files, name: "\n".join(lines).encode("utf-8", "surrogatepass")}
    lines = text.splitlines(keepends=True) if name.endswith(".jsonl") else [text]
    i = draw(st.integers(0, len(lines) - 1))
    if draw(st.booleans()):
        lines[i] = _duplicate_member(lines[i], draw)
    else:
        lines[i] = json.dumps(_mutate_json(draw, json.loads(lines[i]))) + (
            "\n" if name.endswith(".jsonl") else ""
        )
    return {**files, name: "".join(lines).encode("utf-8", "surrogatepass")}


def mutations(reader: str) -> st.SearchStrategy[dict[str, bytes]]:
    files = SAMPLES[reader][1]
    return st.one_of(byte_mutation(files), field_mutation(files))


@contextmanager
def _captured_fds():
    """stdout and stderr at the file-descriptor level (Beam workers log there too); the
    text lands in the yielded dict under "out" and "err" on exit."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        saved = os.dup(1), os.dup(2)
        box: dict[str, str] = {}
        try:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            yield box
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            for key, fh in (("out", out), ("err", err)):
                fh.seek(0)
                box[key] = fh.read().decode("utf-8", "replace")


def error_lines(command: str, err: str) -> list[str]:
    """stderr without the CLI's announce line (`medsimp <command>: <HELP> (from ..., to ...)`)."""
    import importlib

    announce = f"medsimp {command}: {importlib.import_module(f'medsimp.cli.commands.{command}').HELP}"
    return [line for line in err.strip().splitlines() if not line.startswith(announce)]


class _Hang(BaseException):
    pass


def _alarm(signum, frame):
    raise _Hang()


def run_case(reader: str, files: dict[str, bytes], capfd=None) -> str:
    """Write the files, run the reader's command through the CLI, classify the outcome.
    Output is read from pytest's `capfd` when given (pytest owns sys.stdout/stderr then),
    else captured at the file-descriptor level."""
    from medsimp.cli import main

    work = Path(tempfile.mkdtemp(prefix="medsimp-fuzz-"))
    try:
        for name, data in files.items():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_bytes(data)
        out = work / "out"
        argv = [
            "--params",
            str(ROOT / "params.yaml"),
            "--set",
            "beam.num_workers=1",
            COMMAND[reader],
            "--input",
            str(work / SAMPLES[reader][0]),
            "--output",
            str(out),
            "--metrics",
            str(work / "metrics.json"),
        ]
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(HANG_SECONDS)
        try:
            if capfd is None:
                with _captured_fds() as seen:
                    code = main(argv)
            else:
                capfd.readouterr()
                code = main(argv)
                captured = capfd.readouterr()
                seen = {"out": captured.out, "err": captured.err}
        except _Hang:
            return "hang"
        except BaseException:  # noqa: BLE001 - an escaped exception is a traceback for the user
            return "traceback"
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
        shown = seen["out"] + seen["err"]
        if "Traceback" in shown:
            return "traceback"
        reports = [work / "metrics.json", out / "stats.json", *sorted(out.glob("dead_letter/*"))]
        if MARKER in shown or any(MARKER in p.read_text("utf-8", "replace") for p in reports if p.is_file()):
            return "leak"
        if code == 2:
            return (
                "exit2"
                if len(error_lines(COMMAND[reader], seen["err"])) == 1 and not out.exists()
                else "crash"
            )
        if code != 0:
            return "crash"
        stats = json.loads((out / "stats.json").read_text())
        letters = sum(len(p.read_text().splitlines()) for p in out.glob("dead_letter/*.jsonl"))
        reconciled = (
            stats["read"]
            == stats["kept"] + stats["filtered"] + stats["rejected"]
            == (stats["kept"] + stats["filtered"] + letters)
        )
        return "ok" if reconciled else "unreconciled"
    finally:
        shutil.rmtree(work, ignore_errors=True)


HOLDS = ("ok", "exit2")
