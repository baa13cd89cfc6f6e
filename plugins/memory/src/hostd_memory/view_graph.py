"""A memory's neighbourhood as a small inline SVG, drawn on the server.

The memory sits in the middle, the memories it links to or mentions on the right, those that
link to or mention it on the left; each is a link to its page. Drawn here rather than by
Mermaid: no script to load on every memory's page, and every label is escaped text in an SVG
``<text>`` element, so a stored URI or relation can never become markup.
"""

from __future__ import annotations

from collections.abc import Callable

from markupsafe import Markup, escape

MAX_SIDE = 8  # neighbours drawn on each side; the lists below the graph have them all
WIDTH = 900
ROW = 34
LABEL_CHARS = 30


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    rows = max(len(right), len(left), 1)
    height = rows * ROW + 20
    middle_y = height / 2
    centre_x, left_x, right_x = WIDTH / 2, 10, WIDTH - 10
    node_w = 200
    parts = [
        f'<svg class="graph" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(label)}</title>",
    ]

    def node(x: float, y: float, text: str, anchor: str, href: str | None, centre: bool = False) -> None:
        box_x = x - node_w / 2 if anchor == "middle" else (x if anchor == "start" else x - node_w)
        fill, stroke, weight = ("#1f5fbf", "#1f5fbf", "700") if centre else ("#ffffff", "#8a96a6", "400")
        colour = "#ffffff" if centre else "#1d2430"
        shape = (
            f'<rect x="{box_x:.1f}" y="{y - 12:.1f}" width="{node_w}" height="24" rx="6" '
            f'fill="{fill}" stroke="{stroke}"/>'
            f'<text x="{box_x + node_w / 2:.1f}" y="{y + 4:.1f}" text-anchor="middle" font-size="12" '
            f'font-weight="{weight}" fill="{colour}">{escape(_short(text))}</text>'
        )
        if href is None:
            parts.append(f"<g>{shape}</g>")
        else:
            parts.append(f'<a href="{escape(href)}"><title>{escape(text)}</title>{shape}</a>')

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

    parts.append(
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#8a96a6"/></marker></defs>'
    )

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
    return Markup("".join(parts))  # every value above went through escape()
