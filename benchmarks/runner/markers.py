"""Rendered text into a document between a section's marker comments.

The markers are `<!-- BEGIN {tag}...-->` and `<!-- END {tag} -->`; the
BEGIN line's own text (after the tag) is kept, so a section can say which
scenario writes it. The layout written is rounds.publish's exactly (a blank
line after BEGIN, the text, a blank line before END), so sections written
by the old scripts regenerate byte for byte.
"""

from __future__ import annotations

import re


class MarkerError(ValueError):
    pass


def splice(doc: str, tag: str, text: str) -> str:
    begin, end = f"<!-- BEGIN {tag}", f"<!-- END {tag} -->"
    # The whole tag, up to the marker's separator: "laser-tables" must not
    # find "laser-tables-epyc".
    found = list(re.finditer(re.escape(begin) + r"(?=[ :])", doc))
    if len(found) != 1:
        # Unlike rounds.publish, no appending: a scenario names a section
        # that exists, and a typo in the tag must not add a new one.
        raise MarkerError(f"{len(found)} BEGIN markers for {tag!r}; expected one")
    at = found[0]
    head, rest = doc[:at.start()], doc[at.end():]
    marker_line, rest = rest.split("\n", 1)
    if end not in rest:
        raise MarkerError(f"no {end} after the BEGIN marker")
    _, tail = rest.split(end, 1)
    return head + begin + marker_line + "\n\n" + text + "\n" + end + tail


def section(doc: str, tag: str) -> str:
    """The text between the markers as splice wrote it (tests compare it)."""
    begin = re.search(re.escape(f"<!-- BEGIN {tag}") + r"(?=[ :])", doc)
    if begin is None:
        raise MarkerError(f"no BEGIN marker for {tag!r}")
    rest = doc[begin.end():].split("\n", 1)[1]
    body = rest.split(f"<!-- END {tag} -->", 1)[0]
    return body[1:-1]  # splice's blank line after BEGIN and its newline before END
