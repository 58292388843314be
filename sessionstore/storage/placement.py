"""Where a session lives on Citus: so that an append goes straight to the node holding it.

Sent to the coordinator, `sessionstore_append()` (`distribution.py`) is parsed and planned
there, then delegated to the node holding the session: two hops, and the coordinator's CPU
on every append. Every node of a Citus 11+ cluster has the metadata and takes queries
itself, running the call locally when the shard is its own: one hop. A door that knows the
placement sends each append there (`Execute.session`); everything else still goes to the
coordinator.

The placement is the coordinator's own table of shard ranges (`PLACEMENT_SQL`) and Citus's
hash of the session id, which is PostgreSQL's `hashtext` (`citus_hash`). Getting either wrong
costs speed, never correctness: a node that does not hold the session forwards the call, as
the coordinator does. So the table is read again after `Routes.TTL` seconds (a rebalance
moves shards), and a node that cannot be reached is left alone for as long (its appends go to
the coordinator). Nothing here does I/O: `Routes.route` decides, and the door (`SessionStore.step`,
on which the async door runs too) reads `PLACEMENT_SQL` and opens the nodes' connections.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

from sqlalchemy.engine import URL

# The shard ranges of `sessions` (events and the search index are colocated with it) and the
# node holding each, of the nodes that take queries (the metadata is synced to them).
PLACEMENT_SQL: Final = (
    "SELECT s.shardminvalue::integer, s.shardmaxvalue::integer, n.groupid, n.nodename, n.nodeport "
    "FROM pg_dist_shard s JOIN pg_dist_placement p ON p.shardid = s.shardid "
    "JOIN pg_dist_node n ON n.groupid = p.groupid "
    "WHERE s.logicalrelid = 'sessions'::regclass AND p.shardstate = 1 AND n.isactive "
    "AND n.noderole = 'primary' AND n.hasmetadata ORDER BY 1")

_MASK: Final = 0xFFFFFFFF
# Seconds to wait for a node's connection (unless the URL says otherwise): an address the
# application cannot reach may swallow the connection attempt rather than refuse it, and its
# appends would wait for TCP's own timeout (minutes) before going to the coordinator.
NODE_CONNECT_TIMEOUT: Final = 5


class Node(NamedTuple):
    host: str
    port: int

    def url(self, coordinator: URL) -> URL:
        """The coordinator's URL (user, password, database, options) with this node's address."""
        url = coordinator.set(host=self.host, port=self.port)
        if "connect_timeout" not in url.query:
            url = url.update_query_dict({"connect_timeout": str(NODE_CONNECT_TIMEOUT)})
        return url


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _MASK


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    for shift in (4, 6, 8, 16, 19, 4):  # lookup3's mix(): each line of it turns the three words by one
        a = ((a - c) & _MASK) ^ _rot(c, shift)
        a, b, c = b, (c + b) & _MASK, a
    return a, b, c


def _final(a: int, b: int, c: int) -> int:
    for shift in (14, 11, 25, 16, 4, 14, 24):  # lookup3's final(): likewise
        c = ((c ^ b) - _rot(b, shift)) & _MASK
        a, b, c = b, c, a
    return b


@functools.lru_cache(maxsize=65536)  # 6 µs of Python a call, asked at every append of a session
def citus_hash(value: str) -> int:
    """Citus's hash of a varchar distribution value: PostgreSQL's `hashtext` (Bob Jenkins'
    lookup3 `hash_bytes` over the UTF-8 bytes, little-endian words), as a signed 32-bit int."""
    data = value.encode()
    length = len(data)
    a = b = c = (0x9E3779B9 + length + 3923095) & _MASK
    whole = length - length % 12
    for i in range(0, whole, 12):
        a = (a + int.from_bytes(data[i:i + 4], "little")) & _MASK
        b = (b + int.from_bytes(data[i + 4:i + 8], "little")) & _MASK
        c = (c + int.from_bytes(data[i + 8:i + 12], "little")) & _MASK
        a, b, c = _mix(a, b, c)
    rest = data[whole:]
    # The last 11 bytes: a and b take theirs as little-endian words; c's lowest byte is the
    # length's, so its bytes start one higher.
    a = (a + int.from_bytes(rest[0:4], "little")) & _MASK
    b = (b + int.from_bytes(rest[4:8], "little")) & _MASK
    c = (c + (int.from_bytes(rest[8:11], "little") << 8)) & _MASK
    c = _final(a, b, c)
    return c - (1 << 32) if c >= 1 << 31 else c


@dataclass
class Placement:
    """The shard ranges of `sessions`, in order, and the node holding each (None: the
    coordinator, whose connection the door has already)."""

    mins: list[int] = field(default_factory=list)
    nodes: list[Node | None] = field(default_factory=list)

    @classmethod
    def of(cls, rows: Iterable[Sequence[Any]]) -> Placement:
        """From `PLACEMENT_SQL`'s rows (a shard with copies on several nodes: the first)."""
        placement = cls()
        for low, _high, group, host, port in rows:
            if placement.mins and placement.mins[-1] == int(low):
                continue
            placement.mins.append(int(low))
            placement.nodes.append(None if int(group) == 0 else Node(str(host), int(port)))
        return placement

    def node_of(self, session_id: str) -> Node | None:
        """The node holding the session's shard; None for the coordinator or when unknown."""
        at = bisect.bisect_right(self.mins, citus_hash(session_id)) - 1
        return self.nodes[at] if at >= 0 else None


@dataclass
class Routes:
    """A door's routing state: the placement, when it was read, and the nodes that could not be
    reached (with when). Each door reads the placement and connects; this decides."""

    TTL: float = 30.0  # seconds a placement, or a node's being unreachable, is believed
    placement: Placement | None = None
    read_at: float = float("-inf")
    unreachable: dict[Node, float] = field(default_factory=dict)

    def stale(self, now: float) -> bool:
        return now - self.read_at >= self.TTL

    def load(self, rows: Iterable[Sequence[Any]], now: float) -> None:
        self.placement, self.read_at = Placement.of(rows), now

    def node_of(self, session_id: str, now: float) -> Node | None:
        """Where to send the session's append: its node, or None (the coordinator) when that is
        the coordinator, unknown, or could not be reached lately."""
        node = self.placement.node_of(session_id) if self.placement is not None else None
        if node is None or now - self.unreachable.get(node, float("-inf")) < self.TTL:
            return None
        return node

    def failed(self, node: Node, now: float) -> None:
        self.unreachable[node] = now

    def route(self, session: str | None, transaction: bool, pinned: Node | None, now: float
              ) -> tuple[Node | None, Node | None]:
        """Where a call's next statement runs, and where the call's statements go after it: (the
        node or None for the coordinator, the node the call is pinned to or None).

        `session` is the one session the statement touches (`Execute.session`), `transaction`
        whether it begins or ends a transaction, `pinned` where the call's transaction was begun:
        all of a transaction runs on the node it began on, and its end unpins the call. A
        session's statement outside a transaction goes to the session's node; a transaction of
        one session's is begun there and pinned. Everything else stays on the coordinator. The
        door reads the placement first when it is `stale`, and reports a node it cannot reach
        (`failed`): the statement then runs on the coordinator, unpinned."""
        if pinned is not None:
            return pinned, None if transaction else pinned
        node = self.node_of(session, now) if session is not None else None
        return node, node if transaction else None
