"""Beam job: sentence table -> aligned pairs (CRF for English, CRF + Vecalign bridge for others).

Reads `<input>/sentences/*.parquet`, groups sentences by document, and aligns each
document in `AlignDocFn` (CRF model and encoders loaded once per worker in setup()).
Counts documents: read = kept (aligned) + rejected (dead letter with the reason).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import apache_beam as beam

from alignment.bridge import DocumentError, align_document
from alignment.crf import CRFAligner
from alignment.encoders import PairEncoders, make_encoder
from alignment.stage import corpus_scoring_key
from medsimp.params_schema import Align, Beam
from medsimp.progress import ProgressSink
from medsimp.provenance import used_aligner
from medsimp.schemas import PAIRS, pair_sort_key
from pipelines.jobs import objstore
from pipelines.jobs.beam_io import trim_heap
from pipelines.jobs.common import Counter
from pipelines.jobs.runtime import JobSpec, Progress, Table, dead_letter_table, progress_folder, run_job
from pipelines.jobs.sorted_io import ReadDocuments, ReadRows
from pipelines.jobs.store_dofn import StoreDoFn
from pipelines.sources.files import parquet_lineage
from pipelines.sources.tables import SENTENCE_FIELDS, check_sentence_table, grouped_by, sentence_files

NAMESPACE = "align"
TABLES = {
    "pairs": Table("pairs", PAIRS, lambda r: r["doi"], pair_sort_key, counter="pairs_total"),
    "dead_letter": dead_letter_table(),
}


class AlignDocFn(StoreDoFn):
    def __init__(self, params: Align, cache_root: str | None, progress: str | None = None):
        super().__init__()
        self.params = params
        self.cache_root = cache_root
        self.progress = ProgressSink(progress)  # documents done, for the launcher's display

    def setup(self):
        super().setup()  # the progress files may be in the store
        crf_p = self.params.crf
        self.crf_encoder = make_encoder(crf_p.encoder, self.cache_root)
        self.crf = CRFAligner.load(self.params.model, self.crf_encoder, crf_p.merge)
        self.vec_encoders = PairEncoders(self.params.vecalign.encoder, self.cache_root)  # built on first use
        self.vec_params = self.params.vecalign
        self.count = Counter(NAMESPACE)

    def process(self, element):
        doi, rows = element
        rows = sorted(rows, key=lambda r: r["sentence_id"])
        self.count.inc("read")
        before = self._cache_counts()
        fallbacks = dict(self.vec_encoders.fallbacks)
        try:
            pairs = align_document(doi, rows, self.crf, self.vec_encoders, self.vec_params)
        except DocumentError as exc:
            trim_heap()
            self.count.inc("rejected")
            self.progress.tick()  # a document done, though rejected
            self.count.inc(f"rejected.{exc.reason}")
            yield beam.pvalue.TaggedOutput(
                "dead_letter", {"source": "align", "locator": doi, "reason": exc.reason, "detail": str(exc)}
            )
            return
        after = self._cache_counts()
        self.count.inc("cache_hits", after[0] - before[0])
        self.count.inc("cache_misses", after[1] - before[1])
        for pair, n in self.vec_encoders.fallbacks.items():
            if n > fallbacks.get(pair, 0):
                self.count.inc(f"encoder_fallback.{pair}", n - fallbacks.get(pair, 0))
        self.count.inc("kept")
        for p in pairs:
            self.count.inc(f"pairs.{p['language']}")
        self.count.inc("pairs_total", len(pairs))
        trim_heap()  # the document's embeddings and CRF tensors are freed: return their pages
        self.progress.tick()
        yield from pairs

    def finish_bundle(self):
        self.progress.flush()

    def _cache_counts(self) -> tuple[int, int]:
        encs = (self.crf_encoder, self.vec_encoders)
        return sum(e.hits for e in encs), sum(e.misses for e in encs)


class AlignDocuments(beam.PTransform):
    """Sentence rows -> 'pairs' (the aligned pairs of every document) and 'dead_letter' (a
    document that cannot be aligned, with the reason). The CRF model and the encoders load
    once per worker (AlignDocFn.setup)."""

    def __init__(
        self, params: Align, cache_root: str | None, grouped: bool = False, progress: str | None = None
    ):
        super().__init__()
        self.params, self.cache_root, self.grouped = params, cache_root, grouped
        self.progress = progress  # a folder the workers count finished documents in (medsimp.progress)

    def expand(self, sentences):
        if self.grouped:  # (doc_id, rows) already, from ReadDocuments
            docs = sentences
        else:
            docs = (
                sentences
                | "KeyByDoc" >> beam.Map(lambda r: (r["doc_id"], {k: r[k] for k in SENTENCE_FIELDS}))
                | "GroupByDoc" >> beam.GroupByKey()
            )
        aligned = docs | "Align" >> beam.ParDo(
            AlignDocFn(self.params, self.cache_root, self.progress)
        ).with_outputs("dead_letter", main="pairs")
        return {"pairs": aligned.pairs, "dead_letter": aligned.dead_letter}


class AlignCorpus(beam.PTransform):
    """A sentence table's parquet `files` -> 'pairs' and 'dead_letter' (AlignDocuments). A
    table whose documents are consecutive rows of one file (`grouped`: what `cochrane` writes) is
    streamed a document at a time; anything else is read row by row and grouped."""

    def __init__(
        self, files: list[str], params: Align, cache_root: str | None, grouped: bool, progress: str | None
    ):
        super().__init__()
        self.files, self.params, self.cache_root = files, params, cache_root
        self.grouped, self.progress = grouped, progress

    def expand(self, pbegin):
        align = AlignDocuments(self.params, self.cache_root, self.grouped, self.progress)
        if self.grouped:
            docs = pbegin | "Read" >> ReadDocuments(self.files, ["doc_id"], list(SENTENCE_FIELDS))
            keyed = docs | "Key" >> beam.MapTuple(lambda key, rows: (key[0], rows))
            return keyed | "AlignDocuments" >> align
        sentences = pbegin | "Read" >> ReadRows(self.files, list(SENTENCE_FIELDS))
        return sentences | "AlignDocuments" >> align


def fallback_notes(stats: Mapping[str, Any]) -> list[str]:
    """A summary note per language pair that a fallback encoder aligned."""
    return [
        f"the first encoder in align.vecalign.encoder does not cover {pair}; a fallback encoder "
        f"aligned it {n} time(s) (check its quality for that language pair)"
        for pair, n in sorted(stats.get("encoder_fallback_by", {}).items())
    ]


def run(
    input_dir: str,
    out_dir: str,
    params: Align,
    beam_params: Beam,
    beam_args: list[str],
    metrics_file: str | None,
    cache_root: str | None,
    extra: Mapping[str, Any] | None = None,
) -> dict:
    """Align every document of `input_dir`; `extra`: facts stats.json records beside the counts
    (the command passes the aligner model actually used, which the dataset card reads)."""
    files = sentence_files(input_dir)
    documents = check_sentence_table(files)
    grouped = grouped_by(files, ["doc_id"])
    job = AlignCorpus(files, params, cache_root, grouped, progress_folder(out_dir))
    spec = JobSpec(
        NAMESPACE,
        TABLES,
        parquet_lineage(input_dir),
        num_shards=params.num_shards,
        reconcile=(("read", ("kept", "rejected")),),
        zero=("cache_hits", "cache_misses", "pairs_total"),
        extra=extra or {},
        notes=fallback_notes,
        progress=Progress(documents, "align corpus"),
    )
    return run_job(spec, job, out_dir, beam_params, beam_args, metrics_file)


@dataclass(frozen=True)
class Runtime:
    """How `align_corpus` runs besides params `align`: Beam's params and extra arguments, the
    cache folder, the params file's folder (paths are recorded relative to it), the metrics
    file (DVC metrics; None: none) and --force (an object-store output another command wrote)."""

    beam: Beam
    beam_args: list[str]
    cache: str | None
    base: str = "."
    metrics: str | None = None
    force: bool = False


def align_corpus(table: str, out: str, params: Align, runtime: Runtime) -> dict:
    """The `align` stage: the sentence table `table` (or the object-store prefix a stage
    published it to) aligned into the folder `out` (or, for public data only, an object-store
    prefix it is published to: `objstore.stage_output`) with the model `params.model`; its
    stats.json records the aligner it used (the model, its scoring key and the merge: the card
    reads them, not today's params). -> the stats."""
    named = {"--input": table}
    read = objstore.stage_input(runtime.beam, runtime.beam_args, named)["--input"]  # an s3:// table
    output = objstore.stage_output(out, named, runtime.force)  # public data only in a store
    used = {
        **used_aligner(params.model, runtime.base),
        "scoring_key": corpus_scoring_key(params, runtime.cache or None),
        "merge": params.crf.merge,  # what this run merged by: the card reads it, not today's params
    }
    with output as tmp:
        return run(
            read,
            str(tmp),
            params,
            runtime.beam,
            runtime.beam_args,
            runtime.metrics,
            runtime.cache,
            extra={"aligner": used},
        )
