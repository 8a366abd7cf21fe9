"""Issue 29, item 1: `evaluate` knows the output language (readability formula per language,
cross-lingual refusal or flag, the abbreviation dictionary's fit). docs/metrics.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from medsimp.cli import main

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--set", "evaluate.meteor=false", "--set", "evaluate.bertscore=false"]

FR_SRC = "Our results suggest that ultrasound guidance is more successful in infants .\n"
FR_HYP = "Nos résultats montrent que l'échographie aide davantage les bébés .\n"
FR_REF = "Nos données suggèrent que l'échographie est supérieure chez les nourrissons .\n"


def _write(tmp_path: Path, src: str, hyp: str, ref: str) -> list[str]:
    for name, text in (("src", src), ("hyp", hyp), ("ref", ref)):
        (tmp_path / f"{name}.txt").write_text(text, encoding="utf-8")
    return [
        "--hyp",
        str(tmp_path / "hyp.txt"),
        "--ref",
        str(tmp_path / "ref.txt"),
        "--src",
        str(tmp_path / "src.txt"),
    ]


def _run(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "out.json"
    assert main([*FAST, "evaluate", "files", *args, "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_lang_defaults_to_en_in_params_and_schema():
    from medsimp.params_schema import Evaluate

    params = yaml.safe_load((ROOT / "params.yaml").read_text())["evaluate"]
    assert params["lang"] == "en" and params["src_lang"] is None and params["allow_cross_lingual"] is False
    cfg = Evaluate()
    assert (cfg.lang, cfg.src_lang, cfg.allow_cross_lingual) == ("en", None, False)


def test_french_outputs_get_kandel_moles_and_no_fkgl(tmp_path, monkeypatch, capsys):
    """Before: `fkgl` of French outputs was the English formula (a number); now it is null with a
    note and the French formula is reported under its own name, equal to textstat's French Flesch."""
    import textstat

    monkeypatch.chdir(ROOT)
    args = _write(tmp_path, FR_HYP, FR_HYP, FR_REF)
    result = _run(tmp_path, *args, "--lang", "fr", "--select", "fkgl,bleu")
    scores = result["scores"]
    assert scores["fkgl"] is None
    assert "English formula" in result["extra"]["not_computed"]["fkgl"]
    assert "kandel_moles" in result["extra"]["not_computed"]["fkgl"]
    assert "kandel_moles" not in scores  # only selected by name here: fkgl,bleu
    assert "lang:fr|" in result["signature"]
    # select = all (params null): the French formula is listed for French outputs
    result = _run(tmp_path, *args, "--lang", "fr")
    textstat.set_lang("fr")
    try:
        expected = textstat.flesch_reading_ease(FR_HYP)  # one sentence: textstat's count agrees
    finally:
        textstat.set_lang("en_US")
    assert result["scores"]["kandel_moles"] == pytest.approx(expected, abs=1e-4)
    assert result["scales"]["kandel_moles"].startswith("reading ease")
    assert "fernandez_huerta" not in result["scores"] and result["scores"]["fkgl"] is None
    err = capsys.readouterr().err
    assert "note: fkgl not computed (null): FKGL is an English formula" in err


def test_spanish_gets_fernandez_huerta_and_farsi_no_formula(tmp_path, monkeypatch, capsys):
    import textstat

    monkeypatch.chdir(ROOT)
    es = "Los resultados indican que la ecografía es más eficaz en los bebés .\n"
    args = _write(tmp_path, es, es, es)
    result = _run(tmp_path, *args, "--lang", "es", "--select", "fkgl,fernandez_huerta,kandel_moles")
    textstat.set_lang("es")
    try:
        expected = textstat.fernandez_huerta(es)
    finally:
        textstat.set_lang("en_US")
    assert result["scores"]["fernandez_huerta"] == pytest.approx(expected, abs=1e-4)
    assert result["scores"]["fkgl"] is None and result["scores"]["kandel_moles"] is None
    assert "defined for fr text; the outputs are es" in result["extra"]["not_computed"]["kandel_moles"]
    fa = "نتایج نشان می دهد که سونوگرافی در نوزادان موثرتر است .\n"
    args = _write(tmp_path, fa, fa, fa)
    result = _run(tmp_path, *args, "--lang", "fa", "--select", "fkgl")
    assert result["scores"] == {"fkgl": None}
    assert "no readability formula is established for fa" in result["extra"]["not_computed"]["fkgl"]


def test_english_keeps_fkgl_and_lists_no_language_formula(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    text = "the patient had high blood pressure .\n"
    result = _run(tmp_path, *_write(tmp_path, text, text, text))
    assert isinstance(result["scores"]["fkgl"], float)
    assert not {"kandel_moles", "fernandez_huerta"} & set(result["scores"])
    assert "|lang:" not in result["signature"] and "cross_lingual" not in result["extra"]


def test_cross_lingual_sari_is_refused_with_a_note(tmp_path, monkeypatch, capsys):
    """Before: English sources with French outputs gave SARI ~60 (deletion ~100) and no word."""
    monkeypatch.chdir(ROOT)
    args = _write(tmp_path, FR_SRC, FR_HYP, FR_REF)
    capsys.readouterr()
    result = _run(
        tmp_path, *args, "--lang", "fr", "--src-lang", "en", "--select", "sari,sari_xu2016,sari_sentmean,bleu"
    )
    scores, notes = result["scores"], result["extra"]["not_computed"]
    for key in ("sari", "sari_keep", "sari_del", "sari_add", "sari_xu2016", "sari_sentmean"):
        assert scores[key] is None
    for name in ("sari", "sari_xu2016", "sari_sentmean"):
        assert (
            notes[name].startswith("the sources are en and the outputs fr")
            and "--allow-cross-lingual" in notes[name]
        )
    assert isinstance(scores["bleu"], float)  # output vs references: same language, kept
    assert "lang:en>fr|" in result["signature"]
    captured = capsys.readouterr()
    assert "note: sari not computed (null): the sources are en and the outputs fr" in captured.err
    assert "null" in captured.out and "[cross-lingual]" not in captured.out


def test_cross_lingual_sari_computed_and_flagged_on_request(tmp_path, monkeypatch, capsys):
    from medsimp.metrics.sari import corpus_sari

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "160")
    args = _write(tmp_path, FR_SRC, FR_HYP, FR_REF)
    capsys.readouterr()
    result = _run(
        tmp_path,
        *args,
        "--lang",
        "fr",
        "--src-lang",
        "en",
        "--allow-cross-lingual",
        "--select",
        "sari,sari_sentmean",
    )
    expected = corpus_sari([FR_SRC.strip()], [FR_HYP.strip()], [[FR_REF.strip()]])["sari"]
    assert result["scores"]["sari"] == pytest.approx(expected, abs=1e-6)
    assert isinstance(result["scores"]["sari_sentmean"], float)
    flags = result["extra"]["cross_lingual"]
    assert set(flags) == {"sari", "sari_sentmean"} and "en sources, fr outputs" in flags["sari"]
    captured = capsys.readouterr()
    assert "sari (0-100) [cross-lingual]" in captured.out
    assert "sari_del (0-100) [cross-lingual]" in captured.out
    assert "note: sari (cross-lingual): computed across languages on request" in captured.err


def test_medlane_mode_refuses_a_non_english_language(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    args = _write(tmp_path, FR_HYP, FR_HYP, FR_REF)
    capsys.readouterr()
    assert main([*FAST, "evaluate", "files", *args, "--lang", "fr", "--mode", "medlane"]) == 2
    err = capsys.readouterr().err
    assert "--mode medlane is the MedLane authors' English scorer" in err and "Traceback" not in err


def test_lang_from_params_drives_the_scorer(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    args = _write(tmp_path, FR_HYP, FR_HYP, FR_REF)
    out = tmp_path / "p.json"
    assert (
        main(
            [
                *FAST,
                "--set",
                "evaluate.lang=fr",
                "evaluate",
                "files",
                *args,
                "--select",
                "fkgl,kandel_moles",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    scores = json.loads(out.read_text())["scores"]
    assert scores["fkgl"] is None and isinstance(scores["kandel_moles"], float)


def test_default_dictionary_does_not_fit_other_languages_or_non_clinical_data(tmp_path, monkeypatch):
    """HIT took its terms from the MIMIC abbreviation dictionary on any data; now the default
    dictionary fits English clinical notes only, and says so."""
    from medsimp.config import load_params
    from medsimp.evaluation.scorer import Scorer
    from medsimp.metrics.scoring import EvalItem

    monkeypatch.chdir(ROOT)
    p = load_params("params.yaml")

    def run(flags, cfg=None):
        cfg = (cfg or p.evaluate).model_copy(update={k: v for k, v in flags.items() if k == "lang"})
        not_clinical = flags.get("not_clinical")
        scorer = Scorer(cfg, p.train, p.notes, ".", ["hit", "ascore"], p.link, not_clinical=not_clinical)
        items = [EvalItem("pt had htn .", ["the patient had high blood pressure ."])]
        return scorer.evaluate(["the patient had hypertension ."], items, "default")

    fits = run({})
    assert fits.scores["hit"] == 1.0 and "not_computed" not in fits.extra
    cochrane = run({"not_clinical": "builders/multicochrane (its card is not tagged clinical)"})
    assert cochrane.scores["hit"] is None and cochrane.scores["ascore"] is None
    note = cochrane.extra["not_computed"]["hit"]
    assert "does not fit builders/multicochrane" in note and "MIMIC" in note
    assert "hit is null" in cochrane.extra["not_computed"]["ascore"]
    french = run({"lang": "fr"})
    assert french.scores["hit"] is None and "does not fit fr text" in french.extra["not_computed"]["hit"]
    # a dictionary the user names in evaluate.dictionaries is taken as chosen for the data
    chosen = p.evaluate.model_copy(update={"dictionaries": list(p.train.dictionaries)})
    assert run({"not_clinical": "builders/multicochrane"}, chosen).scores["hit"] == 1.0


def test_a_builder_card_without_the_clinical_tag_is_not_clinical(tmp_path):
    from medsimp.evaluation.files import not_clinical

    def card(tags):
        folder = tmp_path / "_".join(tags or ["none"])
        folder.mkdir()
        (folder / "README.md").write_text("---\n" + yaml.safe_dump({"tags": tags}) + "---\n# card\n")
        return str(folder)

    assert not_clinical(card(["cochrane", "medical"])).endswith("(its card is not tagged clinical)")
    assert not_clinical(card(["clinical", "mimic"])) is None
    assert not_clinical(None) is None


EASSE_MIRROR = Path("/work/.mirror/feralvam+easse/repo")


def _script():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "compare_field_tools", ROOT / "scripts" / "compare_field_tools.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["compare_field_tools"] = module
    spec.loader.exec_module(module)
    return module


def test_compare_field_tools_that_cannot_compare_fails_and_says_what_is_missing(tmp_path, capsys):
    """Issue 53: the script printed "skipped" and exited 0 without EASSE or the folder."""
    script = _script()
    assert script.main(["--multicochrane", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().out.startswith("cannot compare: ")
    (tmp_path / "mc" / "data" / "sys_outputs").mkdir(parents=True)
    empty = tmp_path / "no_easse"
    empty.mkdir()
    if importlib_find("easse") is None:  # not installed: the folder given holds no `easse` either
        assert script.main(["--multicochrane", str(tmp_path / "mc"), "--easse", str(empty)]) == 2
        assert "cannot compare: EASSE is not importable" in capsys.readouterr().out


def importlib_find(name: str):
    import importlib.util

    return importlib.util.find_spec(name)


def test_compare_field_tools_on_a_tiny_multicochrane_shaped_folder(tmp_path, capsys):
    """The script on two synthetic systems in MultiCochrane's layout, against EASSE run from its
    source (an extract of the mirror; skipped where there is none), sacrebleu and rouge-score."""
    import subprocess

    script = _script()
    if not EASSE_MIRROR.is_dir():
        pytest.skip("no EASSE source here (feralvam/easse mirror)")
    easse = tmp_path / "easse_src"
    easse.mkdir()
    archive = subprocess.run(
        [
            "git",
            "-C",
            str(EASSE_MIRROR),
            "archive",
            "HEAD",
            "easse/__init__.py",
            "easse/sari.py",
            "easse/utils",
        ],
        capture_output=True,
        check=False,
    )
    subprocess.run(["tar", "-x", "-C", str(easse)], input=archive.stdout, check=True)
    rows = {
        "en": [
            (
                "Pt had htn and dm .",
                "The patient had high blood pressure .",
                "The patient had high blood pressure and diabetes .",
            )
        ],
        "fr": [(FR_SRC.strip(), "\n\n" + FR_HYP.strip(), FR_REF.strip())],
    }
    for lang, systems in script.SYSTEMS.items():
        for _, rel in systems[:1]:
            path = tmp_path / "mc" / "data" / "sys_outputs" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            data = [{"input": s, "output": o, "gold": g} for s, o, g in rows[lang] * 3]
            path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    assert script.main(["--multicochrane", str(tmp_path / "mc"), "--easse", str(easse)]) == 2
    out = capsys.readouterr().out
    assert "largest difference 0 (tolerance 1e-06): ok" in out
    assert "fr   mt5-r0   `medsimp evaluate` refuses sari, sari_xu2016, sari_sentmean by default" in out
    assert "missing gpt/GPT_generations_full_French_plain.json: not compared" in out
    assert "cannot compare 3 of 5 systems: missing " in out.splitlines()[-1]  # found ones: compared


def test_a_dataset_config_in_another_language_than_lang_is_refused(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from medsimp.errors import UsageError
    from medsimp.evaluation.files import check_dataset_language, dataset_language

    for config, langs in (("fr", ["fr", "fr"]), ("mixed", ["fr", "es"])):
        (tmp_path / "b" / config).mkdir(parents=True)
        pq.write_table(pa.table({"language": langs}), tmp_path / "b" / config / "test-0.parquet")
    builder = str(tmp_path / "b")
    assert dataset_language(builder, "fr") == "fr" and dataset_language(builder, "mixed") is None
    with pytest.raises(UsageError, match="holds fr references but the outputs' language is en"):
        check_dataset_language(builder, "fr", "en")
    check_dataset_language(builder, "fr", "fr")  # the right language passes
    (tmp_path / "hyp.txt").write_text("Une phrase .\nUne autre .\n", encoding="utf-8")
    code = main(
        [
            *FAST,
            "evaluate",
            "files",
            "--hyp",
            str(tmp_path / "hyp.txt"),
            "--dataset",
            builder,
            "--config",
            "fr",
        ]
    )
    assert code == 2
    assert "give --lang fr" in capsys.readouterr().err


# --- issue 35 item 2: the language safeguards work without --lang ------------------------------

FA = [
    "این دارو فشار خون را در بیشتر بزرگسالان کاهش می دهد و برای بیشتر مردم بی خطر است .",
    "کودکانی که واکسن دریافت کردند کمتر به عفونت های شدید ریه مبتلا شدند .",
    "ورزش منظم و رژیم غذایی سالم خطر دیابت نوع دو را در بزرگسالان کاهش می دهد .",
    "شواهد کافی برای توصیه این درمان به زنان باردار وجود ندارد .",
]
EN = [
    "This medicine lowers blood pressure in most adults and is safe for most people .",
    "Children who received the vaccine had fewer severe lung infections .",
    "Regular exercise and a healthy diet lower the risk of type 2 diabetes in adults .",
    "There is not enough evidence to recommend this treatment to pregnant women .",
]


def test_check_language_defaults_on_in_params_and_schema():
    from medsimp.params_schema import Evaluate

    assert yaml.safe_load((ROOT / "params.yaml").read_text())["evaluate"]["check_language"] is True
    assert Evaluate().check_language is True


def test_farsi_outputs_under_default_options_are_refused_not_scored_as_english(tmp_path, monkeypatch, capsys):
    """Before: with the default --lang en, Persian outputs got an English FKGL (9.37) and an
    unflagged cross-lingual SARI. Now the outputs' language is detected and the run refused."""
    monkeypatch.chdir(ROOT)
    args = _write(tmp_path, "\n".join(EN) + "\n", "\n".join(FA) + "\n", "\n".join(FA) + "\n")
    assert main([*FAST, "evaluate", "files", *args, "--json", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "read as fa" in err and "give --lang fa" in err
    assert not (tmp_path / "o.json").exists()
    # --lang fa alone: the English sources are named, with the flag to give
    assert main([*FAST, "evaluate", "files", *args, "--lang", "fa"]) == 2
    err = capsys.readouterr().err
    assert "the sources read as en" in err and "give --src-lang en" in err
    # both languages given: no English readability, SARI refused across languages, BERTScore's
    # English model not used on Persian
    out = tmp_path / "scores.json"
    argv = ["--set", "evaluate.meteor=false", "evaluate", "files", *args, "--lang", "fa", "--src-lang", "en"]
    assert main([*argv, "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["scores"]["fkgl"] is None and result["scores"]["sari"] is None
    assert result["scores"]["bertscore_f1"] is None
    assert "MiniLM" in result["extra"]["not_computed"]["bertscore"]


def test_spanish_sources_with_spanish_outputs_pass_the_check(tmp_path, monkeypatch):
    from medsimp.text.language import detect

    es = [
        "El fármaco baja la presión arterial en la mayoría de los adultos y es seguro .",
        "Los niños que recibieron la vacuna tuvieron menos infecciones pulmonares graves .",
        "El ejercicio regular y una dieta sana reducen el riesgo de diabetes en adultos .",
        "No hay pruebas suficientes para recomendar este tratamiento a las mujeres embarazadas .",
    ]
    assert detect(es).lang == "es" and detect(EN).lang == "en" and detect(FA).lang == "fa"
    assert detect(["a b c ."]).lang is None  # too few letters decide nothing
    monkeypatch.chdir(ROOT)
    args = _write(tmp_path, "\n".join(es) + "\n", "\n".join(es) + "\n", "\n".join(es) + "\n")
    assert _run(tmp_path, *args, "--lang", "es", "--select", "bleu")["scores"]["bleu"] == pytest.approx(100.0)


def test_the_rouge_tokenizer_is_a_params_knob_the_flag_overrides(tmp_path):
    # issue 56: `--rouge-tokenizer` was a stage knob on the command line only, not in params.yaml
    from medsimp.params_schema import Evaluate

    assert yaml.safe_load((ROOT / "params.yaml").read_text())["evaluate"]["rouge_tokenizer"] == "nltk"
    assert Evaluate().rouge_tokenizer == "nltk"
    args = _write(tmp_path, FR_SRC, FR_HYP, FR_REF)
    args += ["--lang", "fr", "--select", "rouge_l"]

    def rouge(*extra: str):
        out = tmp_path / "out.json"
        assert main([*FAST, *extra[:2], "evaluate", "files", *args, *extra[2:], "--json", str(out)]) == 0
        found = json.loads(out.read_text())
        return found["scores"]["rouge_l"], found["signature"].rsplit("|", 1)[-1]

    default = rouge("--set", "evaluate.rouge_tokenizer=nltk")
    theirs = rouge("--set", "evaluate.rouge_tokenizer=rouge-score")
    assert default[1].startswith("rouge_l:rouge-score-f1+tok-nltk-treebank-lc")
    assert theirs[1].startswith("rouge_l:rouge-score-f1+tok-rouge-score-default")
    assert theirs[0] != default[0]  # `résultats` is split by rouge-score's tokens, kept by NLTK's
    assert rouge("--set", "evaluate.rouge_tokenizer=nltk", "--rouge-tokenizer", "rouge-score") == theirs


def test_the_language_model_read_from_the_cache_is_py3langids(tmp_path, monkeypatch):
    """py3langid's model is read from a marshal table in the cache (issue 57: decompressing its
    LZMA file cost 0.1-0.2 s a process): built by the first call, read by the next, the same
    arrays, tables and verdicts as `LanguageIdentifier.from_pickled_model`."""
    import numpy as np
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    from medsimp.text import language

    monkeypatch.setenv("MEDSIMP_CACHE", str(tmp_path))
    stock = LanguageIdentifier.from_pickled_model(MODEL_FILE, norm_probs=True)
    texts = ["the patient has high blood pressure", "le patient a une tension élevée", "el paciente", "ok"]
    try:
        for _ in range(2):  # built, then read from the cache
            language._identifier.cache_clear()
            ours = language._identifier()
            for name in ("nb_ptc", "nb_pc"):
                mine, theirs = getattr(ours, name), getattr(stock, name)
                assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)
            assert (ours.nb_classes, ours.tk_nextmove, ours.tk_output) == (
                stock.nb_classes, stock.tk_nextmove, stock.tk_output,
            )  # fmt: skip
            assert [ours.classify(t) for t in texts] == [stock.classify(t) for t in texts]
        assert len(list((tmp_path / "py3langid").glob("*.marshal"))) == 1
    finally:
        language._identifier.cache_clear()


def _texts() -> list[str]:
    """Lines in many scripts, random code points (lone surrogates included), the shortest texts
    (0-4 bytes) and one byte n-gram repeated past py3langid's uint16 counts."""
    import random

    rng = random.Random(57)
    texts = [
        (ROOT / "data/sample/medlane/test.txt").read_text(encoding="utf-8"),
        FR_SRC + FR_HYP + FR_REF,
        "Привет, мир. " * 20000,  # 0xd0/0xd1 lead bytes: over 65,535 each
        "日本語のテキストです。" * 3000,
        "",
        "a",
        "ab",
        "abc",
        "abcd",
        "\udcff x",
    ]
    for _ in range(300):
        texts.append(
            "".join(
                chr(
                    rng.choice([rng.randrange(32, 127), rng.randrange(0, 0x3000), rng.randrange(0, 0x110000)])
                )
                for _ in range(rng.randrange(0, 400))
            )
        )
    return texts


def test_language_features_counted_in_numpy_are_py3langids():
    """`language.features` (numpy, issue 57) equals py3langid's `instance2fv` (its Python walk
    over every byte) array for array, dtype and uint16 wrap-around included, and `classify` its
    verdict and probability, on many scripts, random code points and the shortest texts."""
    import warnings

    import numpy as np

    from medsimp.text import language

    ident = language._identifier()
    for text in _texts():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # numpy on py3langid's uint16 wrap
            theirs = ident.instance2fv(text)
            verdict = ident.classify(text)
        ours = language.features(text)
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), text[:40]
        assert language.classify(text) == verdict, text[:40]


@pytest.mark.slow
def test_py3langids_tokenizer_is_4_definite():
    """What `language.features` rests on: after any 4 bytes, py3langid's tokenizer state does not
    depend on the state before them. From the set of every state, each byte maps each set to the
    set of next states; after 4 bytes every set holds one state (about 12 s)."""
    import numpy as np

    from medsimp.text import language

    moves = np.asarray(language._identifier().tk_nextmove)
    moves = moves.reshape(len(moves) >> 8, 256)
    sets = {tuple(range(len(moves)))}
    for _ in range(3):
        sets = {tuple(np.unique(column)) for s in sets for column in moves[list(s)].T}
    assert all((moves[list(s)] == moves[s[0]]).all() for s in sets)
