"""The store's cost bounds: how much a search ranks, a listing walks, a related-memories
lookup counts, whatever the size of the store. Kept apart so both backends share them.
"""

from __future__ import annotations

# Related memories (read_memory): the memory's first RELATED_TEXT_CHARS characters give at most
# RELATED_TERMS terms; a term or tag is "rare" when at most RELATED_RARE memories hold it, counted
# with queries that stop there; the RELATED_PIECES rarest rank the candidates (so at most
# RELATED_PIECES x RELATED_RARE memories are scored), whatever the size of the store.
RELATED_TEXT_CHARS = 4_000
RELATED_TERMS = 64
RELATED_RARE = 200
RELATED_PIECES = 8
RELATED_LIMIT = 5
# How many tokens found too common for related memories are remembered (so not counted again).
COMMON_TOKENS_KEPT = 200_000
# A listing filtered by tags or times reads the memories of its most selective filter when that
# holds at most LISTING_SELECTIVE (then sorts them); else it first checks the LISTING_WALK first
# memories in rank order (see MemoryStore.list_page).
LISTING_SELECTIVE = 2_000
LISTING_WALK = 2_000
# get_memory_stats lists the most used tags, at most this many.
STATS_TAGS = 100

# Ranking by BM25 costs time per candidate. The strict stage ranks at most the newest
# STRICT_RANK_CAP memories holding every term (a query that broad says little about which one is
# meant). The relaxed stage ranks the memories holding the query's rarest pieces, about
# RELAXED_RANK_CAP of them at most (see ``ranking._relaxed_queries``).
STRICT_RANK_CAP = 400
# The best RESCORE_POOL of each stage by the engine's ranking are scored again in Python, the
# same way on both backends (``search.Scorer``), and the page is taken from them.
RESCORE_POOL = 20
RELAXED_RANK_CAP = 1_000
# create_memory reports memories very like the new one: of its first SIMILAR_QUERY_CHARS
# characters, the memories holding all of the first SIMILAR_PROBE words (or CJK bigrams), or all
# of the last, at most SIMILAR_CANDIDATES each, are compared with it, and those at least
# SIMILAR_THRESHOLD alike (cosine of their word counts) reported, at most SIMILAR_LIMIT.
SIMILAR_PROBE = 6
SIMILAR_CANDIDATES = 5
SIMILAR_QUERY_CHARS = 1_000
SIMILAR_THRESHOLD = 0.8
SIMILAR_LIMIT = 3
# A capped ranking that filters leave short of a page widens tenfold while at most this many.
RANK_WIDEN_MAX = 10_000
# A piece in more than this share of the memories (and more than PREFIX_FLOOR) adds nothing to
# BM25 and is left out of the relaxed stage.
SCORE_SHARE = 0.5
# A word is searched as its stem's prefix only while its forms are in at most this share of the
# memories (or PREFIX_FLOOR): FTS5 reads every token of a prefix in full.
PREFIX_SHARE = 0.05
PREFIX_FLOOR = 1_000
# An import changing at least this many memories (and a quarter of the store) compacts the word index.
COMPACT_AFTER_IMPORT = 1_000
# Tokens counted per statement, and the count that stops early (see ``ranking._count_tokens``).
TOKEN_COUNT_BATCH = 100
BOUNDED_COUNT = "(SELECT count(*) FROM (SELECT 1 FROM memory_words WHERE memory_words MATCH ? LIMIT ?))"
# Completion (completion/complete of memory URIs): a prefix held by at most COMPLETE_SELECTIVE
# memories is read whole and sorted by recency (one row read each); a broader one walks the
# domain's memories newest first in an index until it has a page. At most COMPLETE_DOMAINS_MAX
# domains are ranked.
COMPLETE_SELECTIVE = 300
COMPLETE_DOMAINS_MAX = 1_000
# Completion of tags: a prefix with at most COMPLETE_TAG_ROWS (tag, memory) rows is ranked
# exactly; a broader one over the newest COMPLETE_TAG_WALK visible memories carrying a tag.
COMPLETE_TAG_ROWS = 2_000
COMPLETE_TAG_WALK = 500
