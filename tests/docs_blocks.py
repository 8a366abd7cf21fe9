"""The fenced blocks of README.md and docs/*.md, and the commands they hold (shared by the docs tests).

A block whose info string ends in ``runnable`` (```` ```bash runnable ````, ```` ```python runnable ````)
is run by tests/test_fresh_clone.py in a fresh clone after ``dvc repro`` on the embedded sample.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_LANGS = {"bash", "sh", "shell", "console"}
TOOLS = ("medsimp", "dvc", "make", "python", "pip", "git")
_FENCE = re.compile(r"^(`{3,}|~{3,})\s*(.*)$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    runnable: bool
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """Every fenced block of one markdown file, in order."""
    found: list[Block] = []
    fence, start, info, body = "", 0, "", []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = _FENCE.match(line)
        if not fence and match:
            fence, start, info, body = match.group(1), number, match.group(2).split(), []
        elif fence and line.strip() == fence:
            lang = info[0] if info else ""
            found.append(Block(path, start, lang, info[-1:] == ["runnable"], "\n".join(body) + "\n"))
            fence = ""
        elif fence:
            body.append(line)
    return found


def all_blocks() -> list[Block]:
    return [block for path in DOCS for block in blocks(path)]


def outside_fences(path: Path) -> str:
    """The markdown text with every fenced block removed."""
    kept, fence = [], ""
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _FENCE.match(line)
        if not fence and match:
            fence = match.group(1)
        elif fence and line.strip() == fence:
            fence = ""
        elif not fence:
            kept.append(line)
    return "\n".join(kept)


def inline_commands(path: Path) -> list[str]:
    """Inline code spans that are whole shell commands, not names of one.

    A span that starts with a tool and carries three or more words after it with a flag or a path
    (`medsimp align files --method vecalign --batch pairs.tsv`) is a command; `medsimp align train` or
    `dvc repro` name one, and a synopsis with placeholders (`--input FILE`, `[--json]`, `<stage>`)
    describes one.
    """
    spans = re.findall(r"`([^`\n]+)`", outside_fences(path))
    return [
        span
        for span in spans
        if span.split(" ", 1)[0] in TOOLS
        and len(span.split()) >= 4
        and re.search(r"\s(-\S|\S*/)", span)
        and not re.search(r"[\[<|]|(?<![-\w])[A-Z][A-Z0-9_]*\b", span)
    ]


def commands(block: Block) -> list[list[str]]:
    """The argv of each simple command in a shell block (continuations joined, comments dropped)."""
    text = block.text.replace("\\\n", " ")
    argvs = []
    for line in text.splitlines():
        line = line.removeprefix("$ ").strip()
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"\s(?:&&|\|\||\||;)\s", line):
            lexer = shlex.shlex(part, posix=True, punctuation_chars=False)
            lexer.whitespace_split = True
            lexer.commenters = "#"
            argv = list(lexer)
            while argv and "=" in argv[0] and not argv[0].startswith("-"):  # VAR=value prefixes
                argv.pop(0)
            if argv:
                argvs.append(argv)
    return argvs
