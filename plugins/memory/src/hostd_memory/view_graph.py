"""A memory's neighbourhood as a small inline SVG, drawn on the server.

The memory sits in the middle, the memories it links to or mentions on the right, those that
link to or mention it on the left; each is a link to its page. Drawn here rather than by
Mermaid: no script to load on every memory's page, and every label is escaped text in an SVG
``<text>`` element, so a stored URI or relation can never become markup.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import TYPE_CHECKING

from markupsafe import Markup, escape

from hostd import Text

if TYPE_CHECKING:
    from hostd_memory.models import Relations

MAX_SIDE = 8  # neighbours drawn on each side; the lists below the graph have them all
WIDTH = 900
ROW = 34
LABEL_CHARS = 28  # in Latin letters: a 200 px box at 12 px, with room at its ends


def _width(char: str) -> int:
    """How many Latin letters' room a character takes: a Chinese (wide) one about two."""
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    """``text`` in at most ``limit`` Latin letters' room (a Chinese character counts two), cut
    with an ellipsis: a long Chinese URI or relation stays inside its box and the drawing."""
    if sum(_width(char) for char in text) <= limit:
        return text
    room, kept = limit - 1, []
    for char in text:
        room -= _width(char)
        if room < 0:
            break
        kept.append(char)
    return "".join(kept) + "…"


def neighbourhood_svg(
    uri: str,
    *,
    outgoing: list[tuple[str, str]],
    incoming: list[tuple[str, str]],
    mentions: list[str],
    mentioned_by: list[str],
    url_of: Callable[[str], str],
    label: str,
    mention_words: tuple[str, str] = ("mentions", "mentioned by"),
) -> Markup | None:
    """The SVG, or ``None`` when the memory has no neighbour to draw."""
    right = [(other, relation) for other, relation in outgoing]
    right += [(other, mention_words[0]) for other in mentions if other not in {o for o, _ in right}]
    left = [(other, relation) for other, relation in incoming]
    left += [(other, mention_words[1]) for other in mentioned_by if other not in {o for o, _ in left}]
    right, left = right[:MAX_SIDE], left[:MAX_SIDE]
    if not right and not left:
        return None
    wide = _wide(uri, left, right, url_of, label)
    narrow = _narrow(uri, left, right, url_of, label)
    return Markup(wide + narrow)  # every value in them went through escape()


def memory_graph(
    uri: str, relations: Relations, *, url_of: Callable[[str], str], say: Callable[[Text], str]
) -> Markup | None:
    """The drawing of ``uri``'s neighbourhood from ``read_memory``'s relations, its words said by
    ``say`` (in the reader's language): what the dashboard's memory page shows and what the
    memory's ``memory-graph://`` resource answers (for the view inside a chat client)."""
    return neighbourhood_svg(
        uri,
        outgoing=[(link.uri, link.relation) for link in relations.links_to],
        incoming=[(link.uri, link.relation) for link in relations.linked_from],
        mentions=[m.uri for m in relations.mentions if m.exists],
        mentioned_by=relations.mentioned_by,
        url_of=url_of,
        label=say(Text(en="Links around {uri}", zh="{uri} 周围的链接").format(uri=uri)),
        mention_words=(say(Text(en="mentions", zh="提及")), say(Text(en="mentioned by", zh="被提及"))),
    )


#: Arrowheads, one definition per drawing (ids are the document's: each SVG its own).
def _arrow(marker_id: str) -> str:
    return (
        f'<defs><marker id="{marker_id}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#8a96a6"/>'
        "</marker></defs>"
    )


def _box(x: float, y: float, width: float, text: str, href: str | None, centre: bool, chars: int) -> str:
    """A neighbour (a link to its page) or the memory itself: a rounded box with its URI."""
    fill, stroke, weight = ("#1f5fbf", "#1f5fbf", "700") if centre else ("#ffffff", "#8a96a6", "400")
    colour = "#ffffff" if centre else "#1d2430"
    shape = (
        f'<rect x="{x:.1f}" y="{y - 12:.1f}" width="{width}" height="24" rx="6" '
        f'fill="{fill}" stroke="{stroke}"/>'
        f'<text x="{x + width / 2:.1f}" y="{y + 4:.1f}" text-anchor="middle" font-size="12" '
        f'font-weight="{weight}" fill="{colour}">{escape(_short(text, chars))}</text>'
    )
    if href is None:
        return f"<g>{shape}</g>"
    return f'<a href="{escape(href)}"><title>{escape(text)}</title>{shape}</a>'


#: The narrow drawing, for phones: the memory's neighbours one under another, those linking
#: to it above it and those it links to below, each row as wide as the screen.
NARROW_WIDTH = 340
NARROW_ROW = 46
NARROW_CHARS = 40


def _narrow(
    uri: str,
    left: list[tuple[str, str]],
    right: list[tuple[str, str]],
    url_of: Callable[[str], str],
    label: str,
) -> str:
    trunk, indent, width = 22, 40, NARROW_WIDTH - 50
    rows = len(left) + 1 + len(right)
    height = rows * NARROW_ROW + 8
    centre_y = (len(left) + 0.5) * NARROW_ROW + 8
    parts = [
        f'<svg class="graph narrow" viewBox="0 0 {NARROW_WIDTH} {height}" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(label)}</title>",
        _arrow("arrow-narrow"),
    ]

    def row_y(index: int) -> float:
        return (index + 0.5) * NARROW_ROW + 8

    def relation_text(y: float, relation: str) -> None:
        parts.append(
            f'<text x="{indent + 4}" y="{y - 16:.1f}" font-size="10" fill="#5b6675">'
            f"{escape(_short(relation, 40))}</text>"
        )

    line = 'fill="none" stroke="#8a96a6" stroke-width="1.2" marker-end="url(#arrow-narrow)"'
    for index, (_, relation) in enumerate(left):  # they link here: down the trunk to the memory
        y = row_y(index)
        parts.append(
            f'<polyline points="{indent},{y:.1f} {trunk},{y:.1f} {trunk},{centre_y - 12:.1f}" {line}/>'
        )
        relation_text(y, relation)
    for index, (_, relation) in enumerate(right, start=len(left) + 1):  # it links there
        y = row_y(index)
        parts.append(
            f'<polyline points="{trunk},{centre_y + 12:.1f} {trunk},{y:.1f} {indent},{y:.1f}" {line}/>'
        )
        relation_text(y, relation)
    parts.append(_box(10, centre_y, NARROW_WIDTH - 20, uri, None, True, NARROW_CHARS))
    for index, (other, _) in enumerate(left):
        parts.append(_box(indent, row_y(index), width, other, url_of(other), False, NARROW_CHARS))
    for index, (other, _) in enumerate(right, start=len(left) + 1):
        parts.append(_box(indent, row_y(index), width, other, url_of(other), False, NARROW_CHARS))
    parts.append("</svg>")
    return "".join(parts)


def _wide(
    uri: str,
    left: list[tuple[str, str]],
    right: list[tuple[str, str]],
    url_of: Callable[[str], str],
    label: str,
) -> str:
    """The memory in the middle, those linking to it on the left, those it links to on the right."""
    rows = max(len(right), len(left), 1)
    height = rows * ROW + 20
    middle_y = height / 2
    centre_x, left_x, right_x = WIDTH / 2, 10, WIDTH - 10
    node_w = 200
    parts = [
        f'<svg class="graph wide" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(label)}</title>",
    ]

    def node(x: float, y: float, text: str, anchor: str, href: str | None, centre: bool = False) -> None:
        box_x = x - node_w / 2 if anchor == "middle" else (x if anchor == "start" else x - node_w)
        parts.append(_box(box_x, y, node_w, text, href, centre, LABEL_CHARS))

    def edge(x1: float, y1: float, x2: float, y2: float, relation: str, near_start: bool) -> None:
        parts.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#8a96a6" '
            f'stroke-width="1.2" marker-end="url(#arrow)"/>'
        )
        # The label sits by the neighbour's end, where the lines are still a row apart.
        share = 0.06 if near_start else 0.94
        x, y = x1 + (x2 - x1) * share, y1 + (y2 - y1) * share - 4
        anchor = "start" if near_start else "end"
        parts.append(
            f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="10" '
            f'fill="#5b6675">{escape(_short(relation, 18))}</text>'
        )

    parts.append(_arrow("arrow"))

    def spread(count: int) -> list[float]:
        top = middle_y - (count - 1) * ROW / 2
        return [top + index * ROW for index in range(count)]

    for (_, relation), y in zip(left, spread(len(left)), strict=True):
        edge(left_x + node_w, y, centre_x - node_w / 2, middle_y, relation, near_start=True)
    for (_, relation), y in zip(right, spread(len(right)), strict=True):
        edge(centre_x + node_w / 2, middle_y, right_x - node_w, y, relation, near_start=False)
    node(centre_x, middle_y, uri, "middle", None, centre=True)
    for (other, _), y in zip(left, spread(len(left)), strict=True):
        node(left_x, y, other, "start", url_of(other))
    for (other, _), y in zip(right, spread(len(right)), strict=True):
        node(right_x, y, other, "end", url_of(other))
    parts.append("</svg>")
    return "".join(parts)
