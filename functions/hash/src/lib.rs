//! # sundial-hash
//!
//! The stable hashes of Sundial, in one place. `std`'s `RandomState` is seeded per process and
//! `DefaultHasher`'s algorithm may change between Rust releases, so nothing that is persisted
//! (a job's logical shard, its `open` index partition), recomputed by another process (a fire's
//! dispatch jitter, a retry's jitter draw) or compared across builds (an idempotency
//! fingerprint, an ETag) may use them. Everything here is a pure function of its input bytes,
//! and the tests pin golden values: a changed hash would move every job to another shard, so it
//! must fail a test rather than ship.
//!
//! No dependencies: every crate of the workspace, pure or not, may use it.

/// FNV-1a 64's offset basis.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64's prime.
pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
/// SplitMix64's increment (the golden ratio in 64 bits).
pub const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// FNV-1a 64 streaming state: feed byte slices in order, read [`Fnv1a::finish`].
///
/// Callers that hash several fields feed a separator between them (a byte that cannot occur in
/// the fields), so `("ab", "c")` and `("a", "bc")` never share a byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(FNV_OFFSET)
    }
}

impl Fnv1a {
    /// A fresh state (the offset basis).
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds `bytes`.
    #[must_use]
    pub fn write(self, bytes: &[u8]) -> Self {
        Fnv1a(bytes.iter().fold(self.0, |h, b| (h ^ u64::from(*b)).wrapping_mul(FNV_PRIME)))
    }

    /// The hash of everything fed so far.
    pub fn finish(self) -> u64 {
        self.0
    }
}

/// FNV-1a 64 of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    Fnv1a::new().write(bytes).finish()
}

/// SplitMix64's finaliser: spreads a weak hash's low bits (FNV's) over the whole word.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One SplitMix64 step from `z`: the increment, then the finaliser. A well-mixed 64-bit value
/// from any 64-bit input, so `splitmix64(seed ^ splitmix64(n))` draws the `n`-th value of a
/// seed's stream without a shared cursor.
pub fn splitmix64(z: u64) -> u64 {
    mix64(z.wrapping_add(GOLDEN_GAMMA))
}

/// A seeded SplitMix64 generator: every value is a pure function of the seed, so a run driven
/// by it (a fault schedule, a simulated interleaving) is reproduced from the seed alone.
#[derive(Debug, Clone)]
pub struct SplitMix {
    state: u64,
}

impl SplitMix {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix { state: seed }
    }

    /// The next 64-bit value.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix64(self.state)
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

    // Golden values: these are persisted (shards, open partitions) or shared across processes
    // (jitter). A change here is a data migration, not a refactor.
    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn streaming_equals_one_shot() {
        assert_eq!(Fnv1a::new().write(b"foo").write(b"bar").finish(), fnv1a(b"foobar"));
    }

    #[test]
    fn splitmix_matches_the_reference_sequence() {
        // SplitMix64 seeded with 0 (Vigna's reference implementation).
        let mut s = SplitMix::new(0);
        assert_eq!(s.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(s.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(s.next_u64(), 0x06c4_5d18_8009_454f);
    }

    #[test]
    fn mix64_is_pinned() {
        assert_eq!(mix64(0), 0);
        assert_eq!(mix64(GOLDEN_GAMMA), 0xe220_a839_7b1d_cdaf);
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
    }
}
