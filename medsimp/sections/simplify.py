"""Params `simplify`: the self-correcting LLM simplifier, its backends and its egress."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from medsimp.sections.base import Count, NonNegative, Positive, Section


class SimplifyOpenai(Section):
    base_url: str = ""
    model: str = "gpt-3.5-turbo"
    api_key_env: str = "OPENAI_API_KEY"
    temperature: NonNegative = 0.8
    max_tokens: Positive = 512
    seed: int | None = 0
    timeout: NonNegative = 60
    max_retries: Count = 5
    backoff: NonNegative = 1.0
    max_backoff: NonNegative = 60
    requests_per_minute: NonNegative = 0


class SimplifyLocal(Section):
    path: str = ""
    temperature: NonNegative = 0.8
    max_tokens: Positive = 256
    seed: int = 0


class SimplifyEgress(Section):
    allow_loopback: bool = True
    allowed_endpoints: list[str] = []


class Simplify(Section):
    enabled: bool = False
    backend: Literal["openai", "local"] = "openai"
    input: str = "out/radiology/sentences"
    output: str = "out/simplify"
    prompts: str = "medsimp/resources/prompts/selfcorrect-yang2024.yaml"
    max_rounds: Count = 10
    reviser_memory: bool = True
    concurrency: Positive = 4
    limit: Count = 0
    openai: SimplifyOpenai = Field(default_factory=SimplifyOpenai)
    egress: SimplifyEgress = Field(default_factory=SimplifyEgress)
    local: SimplifyLocal = Field(default_factory=SimplifyLocal)
