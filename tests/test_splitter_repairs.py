"""The multilingual splitter's repair pass on invented abstract text: an unclosed bracket joins only
while the next piece closes it nearby, and pieces with no letters join a neighbour (issue 29)."""

from __future__ import annotations

import pytest

from medsimp.text.multilingual import split_sentences


def _texts(text: str) -> list[str]:
    sents = split_sentences(text, "en")
    assert all(text[s.start : s.end] == s.text for s in sents)
    return [s.text for s in sents]


def test_a_bracket_never_closed_does_not_swallow_the_abstract():
    text = (
        "Three trials (120 people) found fewer falls with the exercise programme "
        "(RR 0.80 (95% CI 0.60 to 0.95). Low-certainty evidence from one trial (40 people) "
        "suggests no difference in pain. Adverse events were rare (2 trials, 90 people). "
        "Nobody withdrew because of the programme."
    )
    assert _texts(text) == [
        "Three trials (120 people) found fewer falls with the exercise programme "
        "(RR 0.80 (95% CI 0.60 to 0.95).",
        "Low-certainty evidence from one trial (40 people) suggests no difference in pain.",
        "Adverse events were rare (2 trials, 90 people).",
        "Nobody withdrew because of the programme.",
    ]


def test_no_sentence_grows_past_the_first_unclosed_bracket():
    opening = "Walking improved (MD 12 metres, 95% CI 3 to 21; 4 trials. "
    rest = " ".join(f"Trial {n} enrolled {10 * n} adults with knee pain." for n in range(1, 40))
    sents = _texts(opening + rest)
    assert max(len(s.split()) for s in sents) < 20
    assert len(sents) == 40


def test_a_sentence_the_authors_wrote_inside_brackets_stays_whole():
    text = (
        "Mortality did not differ (3 trials; 2 deaths among 98 children on placebo. "
        "One further death was not assigned to a group; very low-certainty evidence). "
        "Length of stay was similar."
    )
    assert _texts(text) == [
        "Mortality did not differ (3 trials; 2 deaths among 98 children on placebo. "
        "One further death was not assigned to a group; very low-certainty evidence).",
        "Length of stay was similar.",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "The evidence was of low quality.. Most studies were small.",
            ["The evidence was of low quality..", "Most studies were small."],
        ),
        (
            "Compression helped healing. . Some studies were biased.",
            ["Compression helped healing. .", "Some studies were biased."],
        ),
        (
            'Steroids gave little benefit in macular degeneration. ".',
            ['Steroids gave little benefit in macular degeneration. ".'],
        ),
        (
            "Few people left early (RR 0.21, 95% CI 0.01 to 4.11). 3. Drug A versus drug B "
            "In the short term there was no difference.",
            [
                "Few people left early (RR 0.21, 95% CI 0.01 to 4.11).",
                "3. Drug A versus drug B In the short term there was no difference.",
            ],
        ),
    ],
)
def test_pieces_without_letters_join_a_neighbour(text, expected):
    assert _texts(text) == expected
