//! Deterministic random streams.
//!
//! Every component that draws random numbers (a link's loss model, a reordering stage, a
//! congestion control's random start phase) owns its own [`Rng`], seeded from the scenario
//! seed and the component's stable name (`"link:server->router"`, `"flow:3:cc"`). Adding a
//! flow therefore never changes another link's losses. The generator is xoshiro256++
//! (Blackman & Vigna), seeded through SplitMix64; both are written out here so that the
//! streams can never change under tcplab when a dependency is upgraded.

/// SplitMix64 step: used to expand one 64-bit seed into a generator state.
#[inline]
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a over the component name: a stable 64-bit id independent of build or platform.
pub fn component_id(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// xoshiro256++ generator.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator for component `name` under scenario seed `seed`.
    pub fn for_component(seed: u64, name: &str) -> Self {
        Self::from_seed(seed ^ component_id(name).rotate_left(17))
    }

    pub fn from_seed(seed: u64) -> Self {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        Rng { s }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = (self.s[0].wrapping_add(self.s[3]))
            .rotate_left(23)
            .wrapping_add(self.s[0]);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }

    /// Uniform in [0, n), like the kernel's `get_random_u32_below(n)` (Lemire's method).
    #[inline]
    pub fn below(&mut self, n: u32) -> u32 {
        debug_assert!(n > 0);
        ((self.next_u32() as u64 * n as u64) >> 32) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_independent() {
        let mut a = Rng::for_component(1, "link:a->b");
        let mut b = Rng::for_component(1, "link:a->b");
        let mut c = Rng::for_component(1, "link:b->a");
        let xa: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let xb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let xc: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        assert_eq!(xa, xb);
        assert_ne!(xa, xc);
    }

    #[test]
    fn chance_matches_probability() {
        let mut r = Rng::from_seed(7);
        let n = 200_000;
        let hits = (0..n).filter(|_| r.chance(0.01)).count() as f64;
        // Binomial(200000, 0.01): mean 2000, sd ~44.5; allow 5 sd.
        assert!((hits - 2000.0).abs() < 5.0 * 44.5, "hits={hits}");
    }

    #[test]
    fn below_is_in_range() {
        let mut r = Rng::from_seed(3);
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[r.below(7) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800 && c < 1200), "{seen:?}");
    }
}
