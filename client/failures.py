"""What went wrong, for a person: the errors inside trio's exception groups
(a nursery's failure is a group, nested as deep as the nurseries were),
rather than "Exceptions from Trio nursery (1 sub-exception)".

>>> said(ExceptionGroup("nursery", [ValueError("bad port"), ExceptionGroup("inner", [OSError()])]))
'bad port; OSError'
"""

from __future__ import annotations


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside nested exception groups (`exc` itself if it is none)."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def said(exc: BaseException, *, ignoring: tuple[type[BaseException], ...] = ()) -> str:
    """Each error inside `exc`, in its own words (or its name), joined;
    those of the `ignoring` types left out ("" if none is left)."""
    return "; ".join(
        str(leaf) or type(leaf).__name__ for leaf in leaves(exc) if not isinstance(leaf, ignoring)
    )
