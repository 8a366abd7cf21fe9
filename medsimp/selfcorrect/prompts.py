"""Versioned prompt templates (YAML of Jinja2 strings) for the self-correction roles."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import jinja2
import yaml

from medsimp import resources

ROLES = ("generator_plain", "generator_cot", "generator_revise", "radiologist", "patient", "processor")
DEFAULT_TEMPLATES = resources.path("prompts/selfcorrect-yang2024.yaml")


@dataclass(frozen=True)
class PromptSet:
    """The role templates of one file; `fingerprint` changes with any wording change."""

    version: str
    fingerprint: str
    raw: dict[str, str]

    def user(self, role: str, **values) -> str:
        """The rendered user message of `role`."""
        env = jinja2.Environment(
            undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False
        )
        return env.from_string(self.raw[role]).render(**values).strip()

    def messages(self, role: str, **values) -> list[dict[str, str]]:
        """Chat messages (system + user) for `role` ("generator_*" share the generator system)."""
        system_key = "generator_system" if role.startswith("generator_") else f"{role}_system"
        return [
            {"role": "system", "content": self.raw[system_key].strip()},
            {"role": "user", "content": self.user(role, **values)},
        ]


def load_prompts(path: str | Path | None = None) -> PromptSet:
    """Read a template file and check every role (and its system prompt) is there."""
    path = Path(path) if path else DEFAULT_TEMPLATES
    text = path.read_text(encoding="utf-8")
    raw = yaml.safe_load(text)
    if not isinstance(raw, dict) or "version" not in raw:
        raise ValueError(f"{path}: a prompt file needs a mapping with a `version` key")
    needed = set(ROLES) | {"generator_system", "radiologist_system", "patient_system", "processor_system"}
    missing = sorted(needed - set(raw))
    if missing:
        raise ValueError(f"{path}: missing templates {missing}")
    fingerprint = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return PromptSet(
        version=str(raw["version"]), fingerprint=fingerprint, raw={k: str(v) for k, v in raw.items()}
    )
