"""Sections, clinical sentence splitting and Algorithm 1 (hand-computed) for the notes job."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from medsimp import resources
from medsimp.params_schema import Notes
from medsimp.text.sentences import splitter
from medsimp.text.words import tokenize
from pipelines.text.sections import SectionExtractor, extractor_from_params
from pipelines.text.selection import Selector, load_abbreviations, load_common_words

ROOT = Path(__file__).resolve().parents[1]

NOTE = """Admission Date:  [**2151-7-16**]     Discharge Date:  [**2151-8-4**]

History of Present Illness:
Line one of the HPI.
Line two, wrapped.
Past Medical History:
1. HTN

BRIEF HOSPITAL COURSE: Inline start.
# CHF: diuresed.
1. Afib: rate controlled.
Medications on Admission:
1. ASA
"""


def test_sections_default_headers_end_at_next_header():
    got = [(s.name, s.text) for s in SectionExtractor().extract(NOTE)]
    assert got == [
        ("History of Present Illness", "Line one of the HPI.\nLine two, wrapped."),
        ("Brief Hospital Course", "Inline start.\n# CHF: diuresed.\n1. Afib: rate controlled."),
    ]
    for s in SectionExtractor().extract(NOTE):
        assert NOTE[s.start : s.start + len(s.text)] == s.text


@pytest.mark.parametrize(
    "header,name",
    [
        ("HPI:", "History of Present Illness"),
        ("history of the present illness :", "History of Present Illness"),
        ("  HISTORY OF PRESENT ILLNESS:", "History of Present Illness"),
        ("Brief Summary of Hospital Course:", "Brief Summary of Hospital Course"),
        ("Brief  Hospital  Course:", "Brief Hospital Course"),
    ],
)
def test_section_header_variants(header, name):
    text = f"{header}\nThe body.\nALLERGIES:\nNKDA\n"
    assert [(s.name, s.text) for s in SectionExtractor().extract(text)] == [(name, "The body.")]


@pytest.mark.parametrize("header", ["HOSPITAL COURSE:", "Hospital Course :"])
def test_hospital_course_is_one_params_line_away_not_a_default(header):
    """The defaults are the paper's three sections (§3.1); MIMIC-III's common "HOSPITAL COURSE:"
    is the documented `HOSPITAL_COURSE` option (issue 29)."""
    from medsimp.config import load_params
    from pipelines.text.sections import DEFAULT_TARGETS, HOSPITAL_COURSE

    text = f"{header}\nThe body.\nALLERGIES:\nNKDA\n"
    assert SectionExtractor().extract(text) == []
    assert dict(load_params(ROOT / "params.yaml").notes.headers) == DEFAULT_TARGETS
    wider = extractor_from_params(Notes(headers={**DEFAULT_TARGETS, **HOSPITAL_COURSE}))
    assert [(s.name, s.text) for s in wider.extract(text)] == [("Hospital Course", "The body.")]


def test_non_target_headers_and_custom_patterns():
    text = "Social History:\nNot a target.\nHPI:\nTarget.\nBrief Hospital Course:\nNext.\n"
    got = [(s.name, s.text) for s in SectionExtractor().extract(text)]
    assert got == [("History of Present Illness", "Target."), ("Brief Hospital Course", "Next.")]
    custom = extractor_from_params(Notes(headers={"Course": r"hospital\s+course"}))
    text = "Hospital Course:\nNot a target.\nSocial History:\nLives alone.\n"
    assert [(s.name, s.text) for s in custom.extract(text)] == [("Course", "Not a target.")]
    assert SectionExtractor().extract("HPI:\n\nPast Medical History:\nx") == []


SPLIT_TEXT = (
    "Pt is a 67 y/o M seen at [**Hospital. 18**] on [**2151-7-16**]. Dr. "
    "[**Last Name (STitle) 12**] was consulted. Lasix was cont. at home dose.\n\n"
    "1. CHF: diuresed.\n2. Afib: rate controlled\n \n"
)


@pytest.mark.parametrize("name", ["rules", "rush"])
def test_sentences_keep_placeholders_and_fix_cont(name):
    spans = splitter(name)(SPLIT_TEXT)
    got = [SPLIT_TEXT[a:b] for a, b in spans]
    assert got == [
        "Pt is a 67 y/o M seen at [**Hospital. 18**] on [**2151-7-16**].",
        "Dr. [**Last Name (STitle) 12**] was consulted.",
        "Lasix was cont. at home dose.",
        "CHF:",  # list markers dropped, item headings on their own (issue 29)
        "diuresed.",
        "Afib:",
        "rate controlled",
    ]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Echo showed moderate MR. She was started on lisinopril.", 2),  # mitral regurgitation
        ("Known MS. He walks with a cane.", 2),
        ("Seen by Mr. Smith today.", 1),  # a title
        ("SEEN BY MR. SMITH IN CLINIC.", 1),  # a title in an all-capitals note
        ("Seen by MR. [**Known lastname 123**] today.", 1),  # a title before a placeholder
    ],
)
def test_rules_splitter_tells_capital_mr_from_the_title(text, expected):
    assert len(splitter("rules")(text)) == expected


def test_unknown_splitter_is_an_error():
    with pytest.raises(ValueError, match="unknown sentence splitter"):
        splitter("nope")


TRICKY = [
    "He said \"hi\" -- and left... can't won't (ok) [x] {y} <z> \u201cq\u201d \u2018r\u2019 1,000.5 $5",
    "gonna 'tis wanna lemme",
    "Pt's BP: 120/80; HR 88 - 97%... T 98.6F. s/p CABG x3 b.i.d.",
    "The 'quoted' bit, and ``ticks'' \u2013 dash \u2014 end?!",
    "e.g. Dr. Smith's pt. (n=3).",
    "The nurses' notes ' and the patients' ' 'quoted' words' end.",
]


def test_tokenizer_matches_stock_nltk():
    from nltk.tokenize import NLTKWordTokenizer

    from medsimp.text.words import word_tokenizer

    stock = NLTKWordTokenizer()
    for text in TRICKY + [SPLIT_TEXT, NOTE]:
        assert word_tokenizer().tokenize(text) == stock.tokenize(text)


def test_tokenizer_matches_stock_nltk_on_random_text():
    import random

    from nltk.tokenize import NLTKWordTokenizer

    from medsimp.text.words import word_tokenizer

    pieces = [
        *"abcXYZ019 .,;:!?'\"`()[]{}<>-*$%&@#/",
        "--",
        "...",
        "''",
        "``",
        "\u201c",
        "\u201d",
        "\u2018",
        "\u2019",
        "\u00ab",
        "\u00bb",
        "\u2013",
        "\u2014",
        " can",
        "not ",
        "gon",
        "na ",
        "wan",
        "'t",
        "is",
        "was",
        "'s",
        "n't",
        "'ll",
        "d'ye",
        "gimme",
        "lemme",
        "gotta",
        "more'n",
        " CAN",
        "NoT ",
        "GiMMe",
        "WaN",
        "NA ",
        "'T",
        "IS",
        "\t",
        "\n",
        "  ",
        "\u00a0",
        "\u2009",
        "\x0b",
        "\x1c",  # whitespace to `re`, not to `regex` (NLTK's engine)
        "\u3000",
        "\u0301",  # a combining mark: a word character to `regex`, not to `re`
        "\u00b2",  # superscript two: the other way round
        "\U00010d40",  # a digit in `regex`'s newer Unicode tables only
    ]
    rnd = random.Random(15)
    stock = NLTKWordTokenizer()
    ascii_pieces = [p for p in pieces if p.isascii()]  # an ASCII text takes `_ASCII_TWINS`
    for _ in range(3000):
        for alphabet in (pieces, ascii_pieces):
            text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 25)))
            assert word_tokenizer().tokenize(text) == stock.tokenize(text), repr(text)


def test_tokenizer_rules_are_nltks():
    """The rule tables kept in medsimp/text/words.py (so that scoring does not import NLTK) are
    NLTKWordTokenizer's, pattern, flags and replacement (a new NLTK release that changes
    them fails here)."""
    import re

    from nltk.tokenize import NLTKWordTokenizer as N

    from medsimp.text import words as S

    def std(p):  # NLTK 3.10 wraps its patterns in redos.TimedPattern; ours spell `\s` for re
        rx = getattr(p, "_rx", p)
        return rx.pattern.replace(S._RE_SPACE, r"\s"), rx.flags & (re.I | re.M | re.S | re.U | re.X)

    def table(rules):
        return [(std(p), r) for p, r in rules]

    for name in ("STARTING_QUOTES", "ENDING_QUOTES", "PUNCTUATION"):
        assert table(getattr(S, name)) == table(getattr(N, name)), name
    for name in ("PARENS_BRACKETS", "DOUBLE_DASHES"):
        assert table([getattr(S, name)]) == table([getattr(N, name)]), name
    assert [std(p) for p in S.CONTRACTIONS] == [std(p) for p in N.CONTRACTIONS2 + N.CONTRACTIONS3]


def test_tokenizer_skip_hints_are_keyed_by_nltks_patterns():
    """The rule-skipping hints name rules by pattern, not by index: each names a rule of the
    tables (a renumbered or changed NLTK rule cannot silently get another rule's hint)."""
    from medsimp.text import words as S

    rules = S.STARTING_QUOTES + S.PUNCTUATION + S.ENDING_QUOTES + [S.PARENS_BRACKETS, S.DOUBLE_DASHES]
    patterns = [S.nltk_pattern(rx) for rx, _ in rules]
    assert len(patterns) == len(set(patterns))
    hinted = [S._NEEDS, S._WHITESPACE_ONLY, S._FROM_LAST_PERIOD, S._FROM_LAST_TWO, S._LITERAL, S._ASCII_TWINS]
    assert all(set(h) <= set(patterns) for h in hinted)
    assert [len(h) for h in hinted] == [20, 1, 2, 1, 9, 1]
    assert S._LITERAL <= set(S._NEEDS)  # a literal rule replaces each of its needed substrings


def test_tokenizer_literal_rules_replace_like_their_patterns():
    """A rule run as `str.replace` (`_LITERAL`) matches exactly its needed substrings: every
    character of a sample of Unicode and every pair of them is rewritten as the rule's regex
    rewrites it."""
    from medsimp.text import words as S

    alphabet = [chr(c) for c in range(0x250)] + [chr(c) for c in range(0x2000, 0x2070)] + ["--", "''"]
    for step in S._HEAD + S._TAIL:
        rx, sub, literal = step[0], step[1], step[5]
        if not literal:
            continue
        for a in alphabet:
            for text in (a, f"x{a}y", f"{a}{a}", f"{a}-{a}'"):
                assert S._apply([step], text) == rx.sub(sub, text), (S.nltk_pattern(rx), text)


def test_tokenizer_tables_are_labelled_as_vendored_nltk():
    """words.py says where its NLTK code comes from: the installed NLTK's version, upstream file
    and licence."""
    import inspect
    from importlib.metadata import version

    from medsimp.text import words as S

    source = inspect.getsource(S)
    assert f"Vendored code: NLTK {version('nltk')}, nltk/tokenize/destructive.py" in source
    assert f"https://github.com/nltk/nltk/blob/{version('nltk')}/nltk/tokenize/destructive.py" in source
    assert "Apache License, Version 2.0" in source


@pytest.mark.slow  # over ~2 s: not in the fast loop
def test_tokens_readability_and_rouge_do_not_import_nltk():
    """The metrics' tokens, FKGL's counts and ROUGE are computed without NLTK (its import costs
    about 1.3 s). ROUGE is rouge-score's own scorer (issue 38), whose module imports NLTK at its
    top for paths ROUGE here never takes; it is imported with NLTK deferred (issue 57), and
    rouge-score's stemmer still loads the real NLTK when asked for."""
    import subprocess
    import sys

    code = (
        "import sys; from medsimp.metrics import scoring, rouge, cider; "
        "from medsimp.text import readability; "
        "scoring.tokenize('He cannot go.'); readability.scores('The patient has anemia.', 'en', ['en']); "
        "cider.cider(['a b'], [['a b']]); "
        "assert rouge.rouge_f1([['a', 'b']], [[['a', 'c']]]) == 0.5; "
        "assert 'nltk' not in sys.modules, 'nltk imported'; "
        "from rouge_score.rouge_scorer import RougeScorer; "
        "assert RougeScorer(['rouge1'], use_stemmer=True).score('dogs', 'dog')['rouge1'].fmeasure == 1.0; "
        "assert type(sys.modules['nltk']).__name__ == 'module'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_tokenize_keeps_placeholder_as_one_token():
    assert tokenize("Seen at [**Hospital1 18**], BP 120/80.") == [
        "Seen",
        "at",
        "[**Hospital1 18**]",
        ",",
        "BP",
        "120/80",
        ".",
    ]


A = {"Pt", "ASA", "PO", "b.i.d", "CHF"}
T = {"the", "be", "start", "on", "and", "daily", "with", "a", "patient"}


@pytest.mark.parametrize(
    "sentence,expected",
    [
        # Pt* was started on ASA* 325# mg? PO* daily and metoprolol? 25# mg? PO* b.i.d* .
        # n=16 (the final "." counts), abb=5, unc=10 (the 5 abbreviations, 2 numbers, mg, metoprolol,
        # mg: the pseudocode counts an abbreviation not in T in both abb and unc) -> 15/16 > 0.5
        ("Pt was started on ASA 325 mg PO daily and metoprolol 25 mg PO b.i.d.", (16, 5, 10, 15 / 16, False)),
        # n=9 < 10: abb=1 (CHF), unc=2 (CHF, lasix)
        ("The patient with CHF was started on lasix.", (9, 1, 2, 3 / 9, False)),
        # n=17, abb=1 (CHF), unc=5 (CHF, lasix, seen->see, by, the placeholder) -> 6/17
        (
            "The patient with CHF was started on lasix and the patient was seen by [**Doctor 12**] daily.",
            (17, 1, 5, 6 / 17, True),
        ),
        # every token counts in n (14 with ",", "--", "%", "...", ":"); numbers are uncommon:
        # BP, 120/80, HR, 88, 97, 2L, ok, fine -> unc=8
        ("BP 120/80, HR 88 -- 97% on 2L ... ok: fine", (14, 0, 8, 8 / 14, False)),
        ("", (0, 0, 0, 0.0, False)),
    ],
)
def test_algorithm1_hand_computed(sentence, expected):
    f = Selector(A, T).features(sentence)
    assert (f.n, f.abb, f.unc, f.keep) == (expected[0], expected[1], expected[2], expected[4])
    assert f.ratio == pytest.approx(expected[3])


def test_algorithm1_issue_19_example_numbers_are_uncommon():
    # issue 19 item 4: 16 tokens, uncommon = 3/12, 4/15, 5/20 and "clinic" -> 0.25, kept
    # (the old rules skipped numbers: 1/16 = 0.0625, rejected)
    common = load_common_words(resources.path("common_words.txt"))
    abbreviations = load_abbreviations(resources.path("abbreviations.json"))
    f = Selector(abbreviations, common).features(
        "She was seen in clinic on 3/12 and again on 4/15 and 5/20 with her family"
    )
    assert (f.n, f.abb, f.unc, f.ratio, f.keep) == (16, 0, 4, 0.25, True)


def test_algorithm1_abbreviation_counting_prose_counts_once():
    s = "Pt was started on ASA 325 mg PO daily and metoprolol 25 mg PO b.i.d."
    f = Selector(A, T, abbreviation_counting="prose").features(s)
    assert (f.n, f.abb, f.unc) == (16, 5, 5) and f.ratio == pytest.approx(10 / 16)
    with pytest.raises(ValueError, match="abbreviation_counting"):
        Selector(A, T, abbreviation_counting="both")


def test_algorithm1_case_switch_and_thresholds():
    s = "pt was started on asa."
    # n=6 with ".", lower-case pt/asa are no abbreviations here but uncommon
    assert Selector(A, T).features(s).as_dict() == {"n": 6, "abb": 0, "unc": 2, "ratio": 2 / 6, "keep": False}
    assert Selector(A, T, case_sensitive=False).features(s).abb == 2
    assert Selector(A, T, min_tokens=6).features(s).keep is True
    assert Selector(A, T, min_tokens=6, max_ratio=0.3).features(s).keep is False


def test_lexicon_loaders(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"CHF": ["congestive heart failure"], "PO": "by mouth"}))
    (tmp_path / "a.tsv").write_text("# comment\nCHF\tcongestive heart failure\nHTN\thypertension\textra\n")
    (tmp_path / "a.txt").write_text("CHF\nHTN\n\n")
    (tmp_path / "a.pkl").write_bytes(pickle.dumps({"chf": ["congestive heart failure"]}))
    assert load_abbreviations(tmp_path / "a.json") == {
        "CHF": ["congestive heart failure"],
        "PO": ["by mouth"],
    }
    assert load_abbreviations(tmp_path / "a.tsv")["HTN"] == ["hypertension", "extra"]
    assert set(load_abbreviations(tmp_path / "a.txt")) == {"CHF", "HTN"}
    assert load_abbreviations(tmp_path / "a.pkl") == {"chf": ["congestive heart failure"]}
    (tmp_path / "evil.pkl").write_bytes(pickle.dumps({"x": Path("y")}))
    with pytest.raises(pickle.UnpicklingError, match="refusing"):
        load_abbreviations(tmp_path / "evil.pkl")
    (tmp_path / "t.txt").write_text("The\nbe\n")
    (tmp_path / "t.json").write_text('["The", "be"]')
    assert load_common_words(tmp_path / "t.txt") == load_common_words(tmp_path / "t.json") == {"the", "be"}


def test_shipped_lexicons():
    abbreviations = load_abbreviations(resources.path("abbreviations.json"))
    assert len(abbreviations) >= 300 and all(abbreviations.values())
    for a in ("CHF", "HTN", "s/p", "ED", "BP", "IV", "ICU", "CXR", "y/o", "NS", "PO", "tid"):
        assert a in abbreviations
    common = load_common_words(resources.path("common_words.txt"))
    assert len(common) == 3000 and {"the", "be", "patient", "first", "one"} <= common
    assert not any(ch.isdigit() for w in common for ch in w)  # the lemmatizer's "first" -> "1" is undone
    header = resources.path("common_words.txt").read_text().splitlines()[0]
    assert header.startswith("# STAND-IN for EF's top-3000")
