"""Long fuzz profile of the source readers: mutated sample records through the real CLI.

    python scripts/fuzz.py --minutes 30 [--readers cochrane,devaraj,msd,plaba] [--save DIR]
    python scripts/fuzz.py --params --minutes 10 [--save DIR]

`--params`: hostile params files and `--set` values (tests/fuzz_params.py: alias bombs, deep
nests, duplicate keys, bad bytes, NaN, huge numbers, typos) through the real CLI, each example
on one of the commands of `fuzz_params.CLI_COMMANDS` (filter, cochrane, notes, link, align,
build, evaluate); the property: exit 0 or 2, one stderr line, no traceback, within 60 s.

Uses the strategies and the property of tests/fuzz_readers.py (the CI runs its fast
profile in tests/test_fuzz_readers.py). Prints examples run and how many ended in each
outcome: ok and exit2 hold the property; tracebacks, hangs, unreconciled counts, leaks
(the planted marker in output) and crashes (any other exit) break it. A breaking input is
saved under --save. Exit status 1 when anything broke.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fuzz_readers import HOLDS, SAMPLES, mutations, run_case  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402

BATCH = settings(max_examples=10, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--readers", default=",".join(SAMPLES))
    parser.add_argument("--save", default="fuzz-failures", help="folder for inputs that broke the property")
    parser.add_argument("--params", action="store_true", help="fuzz params files and --set values instead")
    args = parser.parse_args()
    if args.params:
        return fuzz_params(args.minutes, Path(args.save))
    import apache_beam  # noqa: F401 - its start-up warnings once, before any capture

    readers = args.readers.split(",")
    outcomes: collections.Counter = collections.Counter()
    per_reader: dict[str, collections.Counter] = {r: collections.Counter() for r in readers}
    deadline = time.monotonic() + args.minutes * 60
    saved = 0
    while time.monotonic() < deadline:
        for reader in readers:

            @BATCH
            @given(mutations(reader))
            def fuzz(files):
                nonlocal saved
                outcome = run_case(reader, files)  # noqa: B023 - called before the loop moves on
                outcomes[outcome] += 1
                per_reader[reader][outcome] += 1  # noqa: B023
                if outcome not in HOLDS:
                    saved += 1
                    folder = Path(args.save) / f"{saved:04d}-{reader}-{outcome}"  # noqa: B023
                    for name, data in files.items():
                        (folder / name).parent.mkdir(parents=True, exist_ok=True)
                        (folder / name).write_bytes(data)

            fuzz()
            if time.monotonic() >= deadline:
                break
    total = sum(outcomes.values())
    summary = {
        "minutes": args.minutes,
        "examples": total,
        "ok": outcomes["ok"],
        "exit2": outcomes["exit2"],
        "tracebacks": outcomes["traceback"],
        "hangs": outcomes["hang"],
        "unreconciled": outcomes["unreconciled"],
        "leaks": outcomes["leak"],
        "crashes": outcomes["crash"],
        "per_reader": {r: dict(sorted(c.items())) for r, c in per_reader.items()},
    }
    os.write(1, (json.dumps(summary, indent=1) + "\n").encode())
    return 0 if total == outcomes["ok"] + outcomes["exit2"] else 1


def fuzz_params(minutes: float, save: Path) -> int:
    from fuzz_params import CLI_COMMANDS, cli_case, overrides, params_files
    from fuzz_params import HOLDS as PARAMS_HOLD
    from hypothesis import strategies as st

    outcomes: collections.Counter = collections.Counter()
    per_command: dict[str, collections.Counter] = {c: collections.Counter() for c in CLI_COMMANDS}
    deadline = time.monotonic() + minutes * 60
    saved = 0
    while time.monotonic() < deadline:

        @BATCH
        @given(
            st.one_of(st.none(), params_files()),
            st.one_of(st.just([]), overrides()),
            st.sampled_from(sorted(CLI_COMMANDS)),
        )
        def fuzz(data, sets, command):
            nonlocal saved
            outcome = cli_case(data, sets, command=command)
            outcomes[outcome] += 1
            per_command[command][outcome] += 1
            if outcome not in PARAMS_HOLD:
                saved += 1
                folder = save / f"{saved:04d}-params-{command.replace(' ', '-')}-{outcome}"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "params.yaml").write_bytes(data or b"")
                (folder / "set.json").write_text(
                    json.dumps({"command": command, "set": sets}), encoding="utf-8"
                )

        fuzz()
    total = sum(outcomes.values())
    summary = {
        "minutes": minutes,
        "examples": total,
        **dict(sorted(outcomes.items())),
        "by_command": {c: dict(sorted(n.items())) for c, n in per_command.items()},
    }
    os.write(1, (json.dumps(summary, indent=1) + "\n").encode())
    return 0 if total == sum(outcomes[h] for h in PARAMS_HOLD) else 1


if __name__ == "__main__":
    sys.exit(main())
