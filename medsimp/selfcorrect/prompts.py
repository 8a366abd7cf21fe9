"""Versioned prompt templates (YAML of Jinja2 strings) for the self-correction roles.

Named prompt sets (`simplify.prompts` takes a name or a file): `yang2024` (the default: Yang
et al. 2024, App. A.3/A.4 verbatim, flow `per_agent`), `yang2024-paraphrase` (our earlier
paraphrase of the same roles, flow `combined`) and `v1` (our first prompts, flow `combined`).
A file's optional keys: `flow` (`per_agent`: each critic's feedback goes through the
Processor on its own and the refine prompt gets `radiologist_feedback` and
`patient_feedback`; `combined`, the default: one Processor call reads both critics and the
refine prompt gets its summary as `feedback`) and `answer_marker` (a regex; the answer is the
text after its last match, default "SIMPLIFIED:"). An empty `*_system` template sends no
system message (the paper's Generator and Processor have no persona).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import jinja2
import yaml

from medsimp import resources

ROLES = ("generator_plain", "generator_cot", "generator_revise", "radiologist", "patient", "processor")
DEFAULT_TEMPLATES = resources.path("prompts/selfcorrect-yang2024.yaml")
PROMPT_SETS = {
    "yang2024": "prompts/selfcorrect-yang2024.yaml",
    "yang2024-paraphrase": "prompts/selfcorrect-yang2024-paraphrase.yaml",
    "v1": "prompts/selfcorrect-v1.yaml",
}
FLOWS = ("combined", "per_agent")
DEFAULT_ANSWER_MARKER = "SIMPLIFIED:"


@dataclass(frozen=True)
class PromptSet:
    """The role templates of one file; `fingerprint` changes with any wording change."""

    version: str
    fingerprint: str
    raw: dict[str, str]
    flow: str = "combined"
    answer_marker: str = DEFAULT_ANSWER_MARKER

    def user(self, role: str, **values) -> str:
        """The rendered user message of `role`."""
        env = jinja2.Environment(
            undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False
        )
        return env.from_string(self.raw[role]).render(**values).strip()

    def messages(self, role: str, **values) -> list[dict[str, str]]:
        """Chat messages (system + user) for `role` ("generator_*" share the generator system;
        an empty system template sends none)."""
        system_key = "generator_system" if role.startswith("generator_") else f"{role}_system"
        system = self.raw[system_key].strip()
        user = [{"role": "user", "content": self.user(role, **values)}]
        return ([{"role": "system", "content": system}] if system else []) + user


def prompt_path(name_or_path: str | Path | None) -> Path:
    """The file of a named prompt set (`PROMPT_SETS`), else the path itself (None: default)."""
    if not name_or_path:
        return DEFAULT_TEMPLATES
    if str(name_or_path) in PROMPT_SETS:
        return resources.path(PROMPT_SETS[str(name_or_path)])
    return Path(name_or_path)


def load_prompts(path: str | Path | None = None) -> PromptSet:
    """Read a template file (or a named set) and check every role (and its system prompt) is there."""
    path = prompt_path(path)
    text = path.read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    if not isinstance(raw, dict) or "version" not in raw:
        raise ValueError(f"{path}: a prompt file needs a mapping with a `version` key")
    needed = set(ROLES) | {"generator_system", "radiologist_system", "patient_system", "processor_system"}
    missing = sorted(needed - set(raw))
    if missing:
        raise ValueError(f"{path}: missing templates {missing}")
    flow = str(raw.get("flow", "combined"))
    if flow not in FLOWS:
        raise ValueError(f"{path}: flow must be one of {FLOWS}, not {flow!r}")
    marker = str(raw.get("answer_marker", DEFAULT_ANSWER_MARKER))
    try:
        re.compile(marker)
    except re.error as exc:
        raise ValueError(f"{path}: answer_marker is not a regular expression ({exc})") from None
    fingerprint = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return PromptSet(
        version=str(raw["version"]),
        fingerprint=fingerprint,
        raw={k: "" if v is None else str(v) for k, v in raw.items()},
        flow=flow,
        answer_marker=marker,
    )
