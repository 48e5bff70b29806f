//! Static routes.
//!
//! Each node forwards by its own shortest-path (fewest hops) tree, built by a
//! breadth-first search that expands a node's outgoing links in increasing link index;
//! the first time a node is reached fixes the route. Ties therefore break by link order
//! in the scenario file, on every machine. `next_hop[node][dst]` is the outgoing link.
//! Only routers forward: a host is a path's end, never a transit node (Linux hosts run
//! with `net.ipv4.ip_forward = 0`).

use std::collections::VecDeque;

pub const NO_ROUTE: u32 = u32::MAX;

#[derive(Debug, Clone)]
pub struct Routes {
    n: usize,
    next_hop: Vec<u32>,
}

impl Routes {
    /// `links` are `(from, to)` pairs indexed by link id; `forwards[v]` says whether node
    /// `v` forwards (routers do, hosts do not).
    pub fn build(n: usize, links: &[(u32, u32)], forwards: &[bool]) -> Routes {
        let mut out: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, &(a, _)) in links.iter().enumerate() {
            out[a as usize].push(i as u32);
        }
        let mut next_hop = vec![NO_ROUTE; n * n];
        let mut first = vec![NO_ROUTE; n];
        let mut q = VecDeque::new();
        for s in 0..n {
            first.iter_mut().for_each(|f| *f = NO_ROUTE);
            let mut seen = vec![false; n];
            seen[s] = true;
            q.clear();
            q.push_back(s);
            while let Some(v) = q.pop_front() {
                for &l in &out[v] {
                    let w = links[l as usize].1 as usize;
                    if !seen[w] {
                        seen[w] = true;
                        first[w] = if v == s { l } else { first[v] };
                        if forwards[w] {
                            q.push_back(w);
                        }
                    }
                }
            }
            next_hop[s * n..(s + 1) * n].copy_from_slice(&first);
        }
        Routes { n, next_hop }
    }

    #[inline]
    pub fn next_hop(&self, node: u32, dst: u32) -> u32 {
        self.next_hop[node as usize * self.n + dst as usize]
    }

    /// The links a packet crosses from `src` to `dst`, or None if unreachable.
    pub fn path(&self, src: u32, dst: u32, links: &[(u32, u32)]) -> Option<Vec<u32>> {
        let mut v = src;
        let mut p = Vec::new();
        while v != dst {
            let l = self.next_hop(v, dst);
            if l == NO_ROUTE || p.len() > self.n {
                return None;
            }
            p.push(l);
            v = links[l as usize].1;
        }
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumbbell_paths() {
        // 0=s1 1=s2 2=r1 3=r2 4=d ; links bidirectional in file order
        let mut links = Vec::new();
        for (a, b) in [(0, 2), (1, 2), (2, 3), (3, 4)] {
            links.push((a, b));
            links.push((b, a));
        }
        let fw = [false, false, true, true, false];
        let r = Routes::build(5, &links, &fw);
        assert_eq!(r.path(0, 4, &links).unwrap(), vec![0, 4, 6]);
        assert_eq!(r.path(4, 1, &links).unwrap(), vec![7, 5, 3]);
        assert!(Routes::build(2, &[], &[false, false])
            .path(0, 1, &[])
            .is_none());
    }

    #[test]
    fn hosts_do_not_forward() {
        // h0 - h1 - h2 in a line: no route from h0 to h2 through host h1; with h1 a
        // router there is.
        let links = vec![(0, 1), (1, 0), (1, 2), (2, 1)];
        assert!(Routes::build(3, &links, &[false, false, false])
            .path(0, 2, &links)
            .is_none());
        assert_eq!(
            Routes::build(3, &links, &[false, true, false])
                .path(0, 2, &links)
                .unwrap(),
            vec![0, 2]
        );
    }
}
