"""Egress guard: where `medsimp simplify` may send MIMIC-derived text.

PhysioNet's Credentialed Data Use Agreement prohibits sharing the data with third parties,
"including sending it through APIs ... or using it on online platforms". PhysioNet's guidance
("Use of MIMIC Data with Large Language Models and Online Services", 2025-09-24,
https://physionet.org/news/post/llm-responsible-use; earlier "Responsible use of MIMIC data
with online services like GPT", 2023-04-18, https://physionet.org/news/post/415) strongly
recommends locally deployed LLMs and, for cloud APIs, verified zero data retention, no
training on the data and no human review. The rule here:

- Text whose lineage is MIMIC-derived, or unknown (`medsimp.lineage.is_restricted`), or
  which shows MIMIC de-identification placeholders, is *restricted*.
- Restricted text goes to a loopback endpoint (`localhost`, 127.0.0.0/8, ::1) by default
  (`simplify.egress.allow_loopback`).
- Any other endpoint needs BOTH an entry in `simplify.egress.allowed_endpoints` of the params
  *file* (a `--set` override of `simplify.egress` is refused) AND the per-run flag
  `--mimic-egress-dua NAME` naming the data use agreement that covers it. No flag alone
  and no params entry alone lets restricted text leave the machine.
- The check runs before any network call; a refusal is one line (exit 3). Redirects are
  never followed and environment proxies are ignored for restricted runs, so the request
  goes to the endpoint that was checked and nowhere else.

Host names are compared literally (lower-cased, trailing dot removed), never resolved:
`127.0.0.1.example.com` is a remote host, `http://localhost@evil.host/` is refused for
carrying user info, and numeric forms `ipaddress` does not parse (`2130706433`, `0x7f.1`)
are remote.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from medsimp.errors import Refused, UsageError

# The agreements a run may name with --mimic-egress-dua (PhysioNet's credentialed DUA).
KNOWN_DUAS = {
    "physionet-credentialed-health-data-1.5.0": "PhysioNet Credentialed Health Data Use Agreement 1.5.0",
}
GUIDANCE_URL = "https://physionet.org/news/post/llm-responsible-use"


@dataclass(frozen=True)
class Endpoint:
    """A normalised HTTP(S) origin."""

    scheme: str
    host: str
    port: int

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            ip = ipaddress.ip_address(self.host)
        except ValueError:
            return False
        mapped = getattr(ip, "ipv4_mapped", None)
        return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


def parse_endpoint(url: str) -> Endpoint:
    """The origin of `url`; UsageError for anything that is not a plain http(s) URL."""
    try:
        parts = urlsplit(str(url).strip())
        port = parts.port
    except ValueError:
        raise UsageError("simplify.openai.base_url is not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UsageError(f"simplify.openai.base_url must be http:// or https:// (got {scheme or 'none'!r})")
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        raise UsageError(
            "simplify.openai.base_url must not carry user info (user@host); "
            "pass the key through simplify.openai.api_key_env"
        )
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise UsageError("simplify.openai.base_url has no host")
    try:  # the HTTP client parses URLs with urllib3: both parsers must name the same host
        from urllib3.util import parse_url

        theirs = (parse_url(str(url).strip()).host or "").strip("[]").rstrip(".").lower()
    except Exception:  # urllib3 raises its own LocationParseError family
        theirs = None
    if theirs != host:
        raise UsageError("simplify.openai.base_url is ambiguous (URL parsers disagree on its host)")
    return Endpoint(scheme, host, port or (443 if scheme == "https" else 80))


def _allowed(file_params: dict[str, Any]) -> tuple[bool, set[Endpoint]]:
    egress = (file_params.get("simplify") or {}).get("egress") or {}
    if not isinstance(egress, dict):
        raise UsageError("params simplify.egress must be a mapping")
    entries = egress.get("allowed_endpoints") or []
    if not isinstance(entries, list):
        raise UsageError("params simplify.egress.allowed_endpoints must be a list of URLs")
    return bool(egress.get("allow_loopback", True)), {parse_endpoint(e) for e in entries}


def check_overrides(overrides: list[str]) -> None:
    """The allow-list lives in the params file only: refuse `--set simplify.egress...`."""
    for item in overrides or []:
        key = item.split("=", 1)[0].strip()
        if key == "simplify" or key.startswith("simplify.egress"):
            raise Refused("simplify.egress can only be changed in the params file, not with --set")


def decide(base_url: str, restricted: bool, file_params: dict[str, Any], dua: str | None) -> dict[str, Any]:
    """The egress record for the run report, or Refused (before any request is made)."""
    endpoint = parse_endpoint(base_url)
    record: dict[str, Any] = {
        "endpoint": endpoint.origin,
        "loopback": endpoint.loopback,
        "restricted": restricted,
        "dua": None,
    }
    if dua is not None and dua not in KNOWN_DUAS:
        raise UsageError(
            f"--mimic-egress-dua {dua!r} names no known agreement (known: {', '.join(sorted(KNOWN_DUAS))})"
        )
    if not restricted:
        return record
    allow_loopback, allowed = _allowed(file_params)
    if endpoint.loopback and allow_loopback:
        return record
    if endpoint not in allowed:
        raise Refused(
            f"refusing to send MIMIC-derived (or unknown-lineage) text to "
            f"{endpoint.origin}: it is not in simplify.egress.allowed_endpoints of the "
            f"params file (see docs/selfcorrect.md, {GUIDANCE_URL})"
        )
    if dua is None:
        raise Refused(
            f"refusing to send MIMIC-derived (or unknown-lineage) text to "
            f"{endpoint.origin}: allowed in params, but this run lacks "
            f"--mimic-egress-dua naming the data use agreement that covers it"
        )
    record["dua"] = KNOWN_DUAS[dua]
    return record
