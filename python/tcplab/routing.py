"""Static routes: which one-way links a flow's packets cross.

The model (shared with the engine, which computes the same routes on its side; the two
must agree exactly):

* Nodes are numbered from 0: hosts first in file order, then routers in file order.
* Each ``links:`` entry *i* between ``[a, b]`` makes two one-way links: index ``2i`` is
  ``a -> b`` and ``2i + 1`` is ``b -> a``.
* The route from node ``s`` to node ``d`` is found by breadth-first search from ``s``,
  expanding each node's outgoing links in increasing link index; the first time a node is
  reached fixes its parent link. So among equal-hop routes, the one using links listed
  earlier in the file wins, and parallel links between the same two nodes use the first.
* Any node may forward (the rule does not exclude hosts as transit nodes).

Data packets of a flow follow ``route(src, dst)``; its ACKs follow ``route(dst, src)``,
which need not be the mirror image.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

__all__ = ["bfs_route", "route_delay_ns"]


def bfs_route(n_nodes: int, links: Sequence[tuple[int, int]], src: int, dst: int) -> list[int] | None:
    """The one-way link indices from ``src`` to ``dst``, or ``None`` if unreachable.

    ``links[i] = (from_node, to_node)`` for one-way link ``i``.
    """
    if src == dst:
        return []
    outgoing: list[list[int]] = [[] for _ in range(n_nodes)]
    for index, (a, _b) in enumerate(links):  # enumerate order = increasing link index
        outgoing[a].append(index)
    parent_link: list[int | None] = [None] * n_nodes
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
            parent_link[nxt] = index
            if nxt == dst:
                path = []
                at = dst
                while at != src:
                    link = parent_link[at]
                    assert link is not None
                    path.append(link)
                    at = links[link][0]
                return path[::-1]
            queue.append(nxt)
    return None


def route_delay_ns(route: Sequence[int], delays_ns: Sequence[int]) -> int:
    """Sum of the one-way propagation delays along ``route``."""
    return sum(delays_ns[i] for i in route)
