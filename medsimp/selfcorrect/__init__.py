"""LLM self-correction for radiology sentence simplification (Yang et al., Section 4).

`prompts` loads the versioned role templates, `backends` talks to a chat model
(OpenAI-compatible HTTP or a local transformers causal LM), `cache` stores answers by
prompt+model+parameters, `loop` runs Generator -> critics -> Processor rounds, and
`runner` applies the four variants to a sentence table with readability scores.
"""
