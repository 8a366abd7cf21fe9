"""The text toolkit every layer above shares, one tool per genre.

English clinical text and MedLane (selection, metrics, DECLARE's inputs):
  word tokens `medsimp.text.words` (NLTK's `NLTKWordTokenizer`, vendored), sentences
  `medsimp.text.sentences` (rules or PyRuSH), lemmas `medsimp.text.lemmas`.
Reviews, summaries and gold alignments in any language:
  sentences `medsimp.text.multilingual.split_sentences` (pysbd with repairs; `splitter="nltk"`:
  NLTK's English punkt, the MSD job's default), word tokens
  `medsimp.text.multilingual.word_tokens` (lowercased `\\w+` runs).
Every genre: stop words `medsimp.text.stopwords` (spaCy's `STOP_WORDS` per language).
Readability is `medsimp.text.readability`; its word count `words` is textstat's counting rule
(the formulas' W as textstat computes them), not a tokenizer.
"""
