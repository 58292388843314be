"""The global feed's cursor: a position on one server, a place per node on Citus.

On SQLite and plain PostgreSQL the feed is one sequence and its cursor is the position of the
last event read (`read_all(after_position)`), as it always was.

On Citus every node has its own transaction ids and its own running transactions, so "below
the oldest transaction still running" can only be said per node. Each event is stamped on the
node that stores it with `group << 52 | that node's transaction id` (`storage/distribution.py`),
and the feed is the union of one feed per node group, each with exactly the one-server rule
(ordered by (txid, position), ending below that node's horizon). The cursor is therefore a
place per group: an opaque string `FeedPage.cursor`, accepted back by `feed()` and `read_all()`.
The stamps are data, so a shard that moves to another node (a rebalance) keeps its events'
places: they are still read under the group that wrote them, whose horizon only grows. A
group no longer in the cluster (a removed node) writes nothing more: its events are all final.
Events of groups a reader has never seen and that are gone share one place, `*`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from ..errors import ConfigurationError, FeedUnavailable
from ..events import StoredEvent
from ..storage.distribution import GROUP_SHIFT, PLACES_PREFIX

RETIRED: Final = "*"
_START: Final = (-1, 0)  # before every (txid, position)
_LAST_POSITION: Final = 2**63 - 1  # after every position of a txid


class FeedPage(NamedTuple):
    """A page of the global feed and where the next one starts (`feed(after=page.cursor)`): an
    int position on one server, an opaque string on Citus."""

    events: list[StoredEvent]
    cursor: int | str


Places = dict[str, tuple[int, int]]


def parse(after: int | str | None) -> Places:
    """The per-group places of a Citus cursor (0 or None: the start)."""
    if after in (None, 0, "", "0"):
        return {}
    if isinstance(after, str) and after.startswith(PLACES_PREFIX):
        places: Places = {}
        try:
            for part in filter(None, after[len(PLACES_PREFIX):].split(",")):
                group, txid, position = part.split(":")
                places[group] = (int(txid), int(position))
        except ValueError:
            raise ConfigurationError(f"not a feed cursor: {after!r}") from None
        return places
    raise ConfigurationError(f"the feed of a Citus cluster resumes from the cursor a page returned "
                             f"(`store.feed(after=…).cursor`), not from a position ({after!r}): each node "
                             f"has its own transaction ids, so one event cannot say where the others stand")


def position(after: int | str | None) -> int:
    """The position a one-server cursor names (an int, or its digits)."""
    if after is None:
        return 0
    if isinstance(after, str):
        if not after.isdigit():
            raise ConfigurationError(f"not a feed cursor of this database (a position): {after!r}")
        return int(after)
    return after


def format_places(places: Mapping[str, tuple[int, int]]) -> str:
    return PLACES_PREFIX + ",".join(f"{g}:{t}:{p}" for g, (t, p) in sorted(places.items()))


def group_of(txid: int) -> int:
    return txid >> GROUP_SHIFT


def page_params(places: Places, horizons: Mapping[int, int]) -> tuple[list[str], dict[str, Any]]:
    """The groups of a page in order, and the parameters of `Statements.node_feed(len(groups))`:
    for each group its txid range, where it ends (the live node's horizon; a gone one: its whole
    range) and its place; then the place of the retired rest."""
    groups = sorted({*(int(g) for g in places if g != RETIRED), *horizons})
    params: dict[str, Any] = {}
    for i, group in enumerate(groups):
        base = group << GROUP_SHIFT
        params[f"b{i}"] = base
        params[f"e{i}"] = base + (1 << GROUP_SHIFT)
        params[f"u{i}"] = base + horizons[group] if group in horizons else base + (1 << GROUP_SHIFT)
        params[f"x{i}"], params[f"p{i}"] = places.get(str(group), _START)
    params["xr"], params["pr"] = places.get(RETIRED, _START)
    return [str(g) for g in groups], params


def advance(places: Places, groups: Sequence[str], stamped: Iterable[tuple[int, int]]) -> Places:
    """The places after the (txid, position) of each row read, in the page's order."""
    known = set(groups)
    moved = dict(places)
    for txid, position_ in stamped:
        group = str(group_of(txid))
        moved[group if group in known else RETIRED] = (txid, position_)
    return moved


def past_horizons(places: Places, groups: Sequence[str], params: Mapping[str, Any],
                  retired_top: Sequence[Any] | None) -> Places:
    """The places once everything `page_params` selected has been read without a limit: each
    group's place is then the end of what it selected (below the live node's horizon, or its
    whole range), since no row of that group can ever land there; the retired rest moves to the
    last of its rows (`retired_top`)."""
    moved = dict(places)
    for i, group in enumerate(groups):
        moved[group] = (params[f"u{i}"] - 1, _LAST_POSITION)
    if retired_top is not None:
        moved[RETIRED] = (int(retired_top[0]), int(retired_top[1]))
    return moved


def horizons(rows: Iterable[Sequence[Any]]) -> dict[int, int]:
    """Each live node group's horizon (its oldest running transaction id) from the nodes' answers
    (group, answered, answer). A node that did not answer stops the read: taking its group for
    gone would hand out events of transactions it may still be running."""
    found: dict[int, int] = {}
    for group, answered, result in rows:
        if not answered:
            raise FeedUnavailable(f"node group {group}", f"its horizon could not be read: {result}")
        horizon = int(str(result))  # a group's oldest answer, were a group to answer twice: never too far
        found[int(group)] = min(found.get(int(group), horizon), horizon)
    return found

