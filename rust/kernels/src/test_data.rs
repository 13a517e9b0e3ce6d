//! Deterministic test inputs shared by the kernels' unit tests and benches/probes.rs: a xorshift64 sequence, so a
//! failing case is the same on every machine and every run.

/// `n` values in `[lo, lo + span)`: the top 24 bits of each xorshift64 step, scaled. With a
/// power-of-two `span` the scaling is exact, so the values are multiples of `span / 2^24`.
pub fn pseudo_random(n: usize, seed: u64, lo: f32, span: f32) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * span + lo
        })
        .collect()
}
