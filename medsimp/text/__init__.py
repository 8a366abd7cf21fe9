"""The text toolkit every layer above shares: word tokens (`words`) and lemmas (`lemmas`).

Sentence splitting lives with its genre: clinical notes (`medsimp.pipelines.sentences`,
rules or PyRuSH) and reviews/summaries per language (`medsimp.pipelines.multilingual_sentences`,
pysbd with repairs). Readability is `medsimp.pipelines.readability`.
"""
