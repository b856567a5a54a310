//! A tiny seedable generator (SplitMix64) for data order and augmentation: deterministic from
//! (seed, epoch, index), cheap to create per sample, identical on every platform.

/// SplitMix64 (Steele, Lea, Flood 2014).
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next_f64()
    }

    /// Uniform integer in [0, n) (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Standard normal (ziggurat, `rand_distr::StandardNormal`: table lookups, no libm call
    /// on the fast path, the same values on every platform).
    pub fn normal(&mut self) -> f64 {
        rand_distr::Distribution::sample(&rand_distr::StandardNormal, self)
    }
}

impl rand_core::RngCore for SplitMix64 {
    fn next_u32(&mut self) -> u32 {
        (SplitMix64::next_u64(self) >> 32) as u32
    }
    fn next_u64(&mut self) -> u64 {
        SplitMix64::next_u64(self)
    }
    fn fill_bytes(&mut self, dst: &mut [u8]) {
        rand_core::impls::fill_bytes_via_next(self, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    #[test]
    fn normal_draws_are_standard_normal_and_repeat_with_the_seed() {
        let mut rng = SplitMix64::new(11);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        let beyond_2 = xs.iter().filter(|x| x.abs() > 2.0).count() as f64 / n as f64;
        // Standard errors at n = 200k: mean 0.0022, variance 0.0032, tail 0.0005.
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.015, "variance {var}");
        assert!((beyond_2 - 0.0455).abs() < 0.003, "P(|x| > 2) = {beyond_2}");
        let mut again = SplitMix64::new(11);
        assert!(xs[..100].iter().all(|&x| x == again.normal()));
    }
}
