"""Static routes: which one-way links a flow's packets cross.

The model (shared with the engine, which computes the same routes on its side; the two
must agree exactly):

* Nodes are numbered from 0: hosts first in file order, then routers in file order.
* Each ``links:`` entry *i* between ``[a, b]`` makes two one-way links: index ``2i`` is
  ``a -> b`` and ``2i + 1`` is ``b -> a``.
* Every node forwards by its own shortest-path (fewest hops) tree: a breadth-first
  search from that node expanding outgoing links in increasing link index, where the
  first time a node is reached fixes its first hop. A packet from ``s`` to ``d`` takes
  ``s``'s first hop towards ``d``, then the next node's first hop, and so on. Among
  equal-hop routes the links listed earlier in the file win, and parallel links between
  the same two nodes use the first.
* Only routers forward: a host is a route's end, never a transit node (Linux hosts run
  with ``net.ipv4.ip_forward = 0``).

Data packets of a flow follow ``route(src, dst)``; its ACKs follow ``route(dst, src)``,
which need not be the mirror image.

Floor 1 (DESIGN.md's "Layout"): imports nothing of tcplab; :mod:`tcplab.scenario` and
:mod:`tcplab.results.paths` route with it. ``tests/test_routing_twin.py`` holds it to the
engine's routes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

__all__ = ["bfs_route", "route_delay_ns"]


def _first_hops(
    n_nodes: int, outgoing: list[list[int]], links: Sequence[tuple[int, int]], forwards: Sequence[bool], src: int
) -> list[int | None]:
    """For every node, the link ``src`` sends on to reach it (BFS, hosts not expanded)."""
    first: list[int | None] = [None] * n_nodes
    seen = [False] * n_nodes
    seen[src] = True
    queue = deque([src])
    while queue:
        node = queue.popleft()
        for index in outgoing[node]:
            nxt = links[index][1]
            if seen[nxt]:
                continue
            seen[nxt] = True
            first[nxt] = index if node == src else first[node]
            if forwards[nxt]:
                queue.append(nxt)
    return first


def bfs_route(
    n_nodes: int,
    links: Sequence[tuple[int, int]],
    src: int,
    dst: int,
    forwards: Sequence[bool] | None = None,
) -> list[int] | None:
    """The one-way link indices from ``src`` to ``dst``, or ``None`` if unreachable.

    ``links[i] = (from_node, to_node)`` for one-way link ``i``; ``forwards[v]`` says
    whether node ``v`` forwards (routers); by default every node does.
    """
    if src == dst:
        return []
    fw = list(forwards) if forwards is not None else [True] * n_nodes
    outgoing: list[list[int]] = [[] for _ in range(n_nodes)]
    for index, (a, _b) in enumerate(links):  # enumerate order = increasing link index
        outgoing[a].append(index)
    path: list[int] = []
    node = src
    while node != dst:
        if path and not fw[node]:
            return None
        hop = _first_hops(n_nodes, outgoing, links, fw, node)[dst]
        if hop is None or len(path) > n_nodes:
            return None
        path.append(hop)
        node = links[hop][1]
    return path


def route_delay_ns(route: Sequence[int], delays_ns: Sequence[int]) -> int:
    """Sum of the one-way propagation delays along ``route``."""
    return sum(delays_ns[i] for i in route)
