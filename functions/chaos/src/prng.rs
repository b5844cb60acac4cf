//! A tiny seeded PRNG (SplitMix64), so every fault decision is a pure function of the seed.
//!
//! Why not `rand`: the chaos run must make the same decisions for the same seed on every build,
//! and decisions are drawn by index (`at(seed, n)`) rather than from a shared stream, so that
//! concurrent requests do not reorder each other's draws more than their arrival order does.

pub use sundial_hash::{splitmix64 as mix, SplitMix};

/// The `n`-th value of the stream of `seed`, drawn independently of the others.
pub fn at(seed: u64, n: u64) -> u64 {
    mix(seed ^ mix(n))
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
