"""Loading `params.yaml` with command-line overrides, and a stable params hash.

The params schema (pydantic) and the YAML reader are imported when first needed, not with this
module: a params file that is not there, a folder or not readable is refused before either loads
(issue 57 §4: a refusal costs no start-up; tests/test_startup.py)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medsimp import resources
from medsimp.errors import UsageError
from medsimp.places import check_writable_folder

if TYPE_CHECKING:
    from pydantic import BaseModel

    from medsimp.params_schema import Params


class ParamsError(UsageError, ValueError):
    """A params file or override that cannot be used."""


def _set_dotted(tree: dict, dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = tree
    for key in keys[:-1]:
        if node.get(key) is None:  # absent, or an empty section (`humaneval:`)
            node[key] = {}
        node = node[key]
        if not isinstance(node, dict):
            raise ParamsError(f"cannot set {dotted!r}: {key!r} is not a mapping")
    node[keys[-1]] = value


def apply_overrides(params: dict, overrides: list[str]) -> dict:
    """Return a copy of a raw params mapping with `key.sub=value` overrides applied (values
    parsed as bounded YAML, `medsimp.yamlsafe`)."""
    from medsimp import yamlsafe

    out = copy.deepcopy(params)
    for item in overrides:
        if "=" not in item:
            raise ParamsError(f"override {item[:60]!r} must look like key.sub=value")
        key, raw = item.split("=", 1)
        try:
            _set_dotted(out, key.strip(), yamlsafe.load(raw))
        except yamlsafe.YamlError as exc:
            raise ParamsError(f"override {key.strip()[:60]!r}: {exc}") from None
    return out


DEFAULT_PATH = "params.yaml"


def read_params_file(path: str | Path, required: bool) -> dict:
    """The mapping a params file holds; a missing file is {} only when not `required`.
    Every way a file can be unusable (missing, a folder, not UTF-8, not YAML, an alias bomb,
    nested too deep, a duplicate key) is a one-line ParamsError."""
    p = Path(path)
    try:
        text = _read_regular_text(p)
    except FileNotFoundError:
        if required:
            raise ParamsError(f"params file {str(p)!r} not found (check --params / MEDSIMP_PARAMS)") from None
        return {}
    except IsADirectoryError:
        raise ParamsError(f"params file {str(p)!r} is a folder, not a file") from None
    except UnicodeDecodeError:
        raise ParamsError(f"{p}: not UTF-8 text") from None
    except OSError as exc:
        raise ParamsError(
            f"params file {str(p)!r} cannot be read ({exc.strerror or type(exc).__name__})"
        ) from None
    from medsimp import yamlsafe  # once the file is read: a missing one costs no YAML reader

    try:
        data = yamlsafe.load(text)
    except yamlsafe.YamlError as exc:
        raise ParamsError(f"{p}: {exc}") from None
    except ValueError:  # an integer of more digits than Python converts
        raise ParamsError(f"{p}: holds a number too long to read") from None
    if data is not None and not isinstance(data, dict):
        raise ParamsError(f"{p} must hold a mapping at top level")
    return data or {}


MAX_PARAMS_BYTES = 16 << 20  # a params file is a few kB; more is not a params file


def _read_regular_text(p: Path) -> str:
    """The UTF-8 text of a regular file: a FIFO or a device is refused before anything is read
    (issue 35 item 10: /dev/zero was read to a MemoryError, a FIFO hung)."""
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fh.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(str(p))
        if not stat.S_ISREG(mode):
            raise ParamsError(f"params file {str(p)!r} is not a regular file (a FIFO, socket or device)")
        data = fh.read(MAX_PARAMS_BYTES + 1)
    if len(data) > MAX_PARAMS_BYTES:
        raise ParamsError(f"params file {str(p)!r} is over {MAX_PARAMS_BYTES >> 20} MiB: not a params file")
    return data.decode("utf-8")


def _implicit_params_trusted(p: Path, data: dict) -> dict:
    """What an implicitly found ./params.yaml (no --params, no MEDSIMP_PARAMS) may do (issue 35
    item 9). It is another tool's file when it names no medsimp section (a DVC project's
    `model: {lr: ...}`): ignored, with one note, and the defaults are used. It is refused when
    another user owns it or everyone can write it (group-writable is allowed: a per-user group under
    umask 002): it decides every path medsimp reads and writes
    (cache.dir, outputs), so it must be as private as the command's own arguments."""
    from medsimp.params_schema import Params

    sections = set(Params.model_fields)
    if data and not sections & set(data):
        print(
            f"note: {p} names no medsimp section ({', '.join(sorted(map(str, data))[:5])}): it is not a medsimp "
            "params file and is ignored; the defaults are used (name a file with --params)",
            file=sys.stderr,
        )
        return {}
    st = os.stat(p)
    # group-writable is allowed: umask 002 with per-user groups (Debian, Ubuntu) makes every file so
    if st.st_uid != os.geteuid() or st.st_mode & 0o002:
        raise ParamsError(
            f"{p} (found in the current folder) is owned by another user or writable by everyone (mode "
            f"{stat.S_IMODE(st.st_mode):o}): medsimp does not take paths and cache.dir from it; name it "
            "with --params if you trust it"
        )
    return data


def load_params(
    path: str | Path = DEFAULT_PATH, overrides: list[str] | None = None, required: bool | None = None
) -> Params:
    """Read the params file once into typed `Params` (every default filled in), with overrides.

    The file and every override are checked against `medsimp.params_schema`: unknown keys, wrong
    types and out-of-range values are a one-line ParamsError (exit 2). A missing file is an error
    unless it is the implicit `params.yaml` (`required=None`) or `required=False`.
    `Params.raw` keeps the mapping as written (what `params_hash` hashes)."""
    if required is None:
        required = str(path) != DEFAULT_PATH
    p = Path(path)
    data = read_params_file(p, required)
    if str(path) == DEFAULT_PATH and not required and data:
        data = _implicit_params_trusted(p, data)
    from medsimp import params_schema

    try:
        data = params_schema.check_file(data, str(p))
        for item in overrides or []:
            _set_dotted(data, *params_schema.parse_override(item))
        typed = params_schema.validate(data)  # after every override: ordered pairs see them all
    except params_schema.SchemaError as exc:
        raise ParamsError(str(exc)) from None
    typed._raw = data
    return typed


def resolve_path(value: str | Path, base: str | Path = ".") -> str:
    """A path named in params: relative to `base`, the params file's folder (not the current
    one); absolute paths and URLs (`gs://...`) are kept. An output named in params goes through
    `resolve_output`, which refuses a relative one from another folder's params file. `medsimp/resources/<name>` that is not
    under `base` (an installed medsimp, no checkout) is the packaged file (`resources.path`)."""
    text = str(value)
    if "://" in text:
        return text
    path = os.path.join(base, text)
    if text.startswith(resources.FOLDER) and not os.path.exists(path):
        return str(resources.path(text.removeprefix(resources.FOLDER)))
    return path


def resolve_output(value: str | Path, base: str | Path, key: str, flag: str = "--output") -> str:
    """An OUTPUT path taken from params (the command's `flag` not given): `resolve_path`, except
    that a relative one is refused (ParamsError, exit 2) when `base`, the params file's folder,
    is not the current folder. A params file named from another folder (`--params
    <checkout>/params.yaml`) would otherwise write into that folder (a checkout, someone's
    project); putting the output under the current folder instead would leave the next stage,
    which reads it through the same params file, reading the params folder's copy. Inputs, the
    params folder's cache (`cache.dir`) and outputs named on the command line are not affected
    (docs/formats.md "Where relative paths resolve")."""
    text = str(value)
    if "://" in text or os.path.isabs(text) or _same_folder(base, os.getcwd()):
        return resolve_path(value, base)
    raise ParamsError(
        f"params {key}: {text!r} is relative to the params file's folder {os.path.abspath(base)}, not the "
        f"current one: run from that folder, give {flag}, or make {key} absolute"
    )


def _same_folder(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def shown_path(path: str | Path, base: str | Path) -> str:
    """`path` as an output or message records it: relative to `base`, the params file's folder,
    when under it (as params names it), else absolute; so the bytes do not depend on the folder
    the command ran from or on how the path was typed. URLs are kept."""
    text = str(path)
    if "://" in text:
        return text
    full = os.path.abspath(text)
    rel = os.path.relpath(full, os.path.abspath(base))
    return full if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


def cache_path(params: Params, base: str | Path) -> str | None:
    """params `cache.dir` resolved against the params file's folder `base`, checked usable
    (`check_cache_dir`) before the command's work; None: no cache."""
    if not params.cache.dir:
        return None
    folder = resolve_path(params.cache.dir, base)
    check_cache_dir(folder)
    return folder


def check_cache_dir(folder: str) -> None:
    """UsageError, in one line naming cache.dir and what is wrong, unless `folder` is a folder
    this user can write in or can create (`places.check_writable_folder`): before, a cache.dir
    below a file or under /proc failed after the work as an internal error or "not found"
    (issue 54)."""
    check_writable_folder(folder, "cache.dir")


def params_dir(params_file: str | Path) -> Path:
    """The folder relative params paths are resolved against."""
    return Path(params_file).resolve().parent


def params_hash(params: Params | BaseModel | dict) -> str:
    """sha256 of the canonical JSON of `params` (first 16 hex digits): of a loaded `Params`, the
    file as written (`raw`); of a typed section, its values (defaults filled in)."""
    from pydantic import BaseModel

    from medsimp.params_schema import Params

    if isinstance(params, Params):
        params = params.raw
    elif isinstance(params, BaseModel):
        params = params.model_dump()
    blob = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
