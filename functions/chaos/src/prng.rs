//! A tiny seeded PRNG (SplitMix64), so every fault decision is a pure function of the seed.
//!
//! Why not `rand`: the chaos run must make the same decisions for the same seed on every build,
//! and decisions are drawn by index (`at(seed, n)`) rather than from a shared stream, so that
//! concurrent requests do not reorder each other's draws more than their arrival order does.

/// One SplitMix64 step: a well-mixed 64-bit value from any 64-bit input.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The `n`-th value of the stream of `seed`, drawn independently of the others.
pub fn at(seed: u64, n: u64) -> u64 {
    mix(seed ^ mix(n))
}

/// A sequential stream (for the chaos controller's own plan).
#[derive(Debug, Clone)]
pub struct SplitMix {
    state: u64,
}

impl SplitMix {
    /// A stream starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.state.wrapping_sub(0x9E37_79B9_7F4A_7C15))
    }

    /// A value in `0..n` (`0` when `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    /// A value in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True with probability `permille / 1000`.
    pub fn chance(&mut self, permille: u32) -> bool {
        self.below(1000) < u64::from(permille)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_seed_dependent() {
        let a: Vec<u64> = (0..5).map(|n| at(7, n)).collect();
        let b: Vec<u64> = (0..5).map(|n| at(7, n)).collect();
        let c: Vec<u64> = (0..5).map(|n| at(8, n)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut s = SplitMix::new(7);
        let mut t = SplitMix::new(7);
        assert_eq!(s.next_u64(), t.next_u64());
    }

    #[test]
    fn draws_stay_in_range_and_chance_tracks_its_rate() {
        let mut s = SplitMix::new(42);
        let mut hits = 0;
        for _ in 0..10_000 {
            let v = s.between(3, 9);
            assert!((3..=9).contains(&v));
            if s.chance(250) {
                hits += 1;
            }
        }
        // 2,500 expected; a 4-sigma band is about ±170.
        assert!((2_300..2_700).contains(&hits), "{hits}");
        assert_eq!(s.below(0), 0);
    }
}
