"""What a copy is: a pair whose simple side barely rewrites the complex one (issue 53, "copies
under control"). One definition for the filter's `drop_copies` option (`alignment.overlap`), the
dataset card and the data report (`medsimp.report.data.near_copies`)."""

from __future__ import annotations

from medsimp.text.readability import tokens


def copy_kind(complex_text: str, simple_text: str, copy_overlap: float) -> str | None:
    """Whether the simple side barely rewrites the complex one (issue 53, "copies under
    control"; one definition for the filter, the card and the data report):
    - "identical": the same words in the same order (white space aside);
    - "near_copy": not identical, and each side's lower-cased word set shares at least
      `copy_overlap` (params `filter.copy_overlap`, 0.9) of itself with the other's;
    - None otherwise."""
    if not complex_text.split() or not simple_text.split():  # an empty side is not a copy
        return None
    if complex_text.split() == simple_text.split():
        return "identical"
    a, b = {t.lower() for t in tokens(complex_text)}, {t.lower() for t in tokens(simple_text)}
    shared = len(a & b)
    if a and b and shared >= copy_overlap * len(a) and shared >= copy_overlap * len(b):
        return "near_copy"
    return None


def judged_pair(row) -> tuple[str, str]:
    """The two texts a copy is judged on, as the overlap filter judges a pair: an English pair's
    own sides; a bridged pair's (another language, `pivot_ids`) English pair it comes through
    (`complex_text`, `pivot_text`), since words of two languages cannot be compared; a MedLane
    row's source and target."""
    if "complex_text" not in row:
        return row.get("source") or "", row.get("target") or ""
    bridged = row.get("language") != "en" and row.get("pivot_ids")
    return row.get("complex_text") or "", (row.get("pivot_text") if bridged else row.get("simple_text")) or ""


def row_copy_kind(row, copy_overlap: float) -> str | None:
    """`copy_kind` of a row's `judged_pair`: the filter's `drop_copies`, the card's and the data
    report's shares use this one definition."""
    return copy_kind(*judged_pair(row), copy_overlap)


# what `filter.drop_copies` drops: none (the paper), identical pairs, or near copies too
DROPS = {"none": (), "identical": ("identical",), "near_copy": ("identical", "near_copy")}
