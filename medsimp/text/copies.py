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
    if complex_text.split() == simple_text.split():
        return "identical"
    a, b = {t.lower() for t in tokens(complex_text)}, {t.lower() for t in tokens(simple_text)}
    shared = len(a & b)
    if a and b and shared >= copy_overlap * len(a) and shared >= copy_overlap * len(b):
        return "near_copy"
    return None


# what `filter.drop_copies` drops: none (the paper), identical pairs, or near copies too
DROPS = {"none": (), "identical": ("identical",), "near_copy": ("identical", "near_copy")}
