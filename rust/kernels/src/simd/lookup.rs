//! Table lookups held in registers: lane i of the result is `table[idx_i % 16]`.
//!
//! exp reads `2^(j/16)` this way. AVX-512 does it with one permute of the register that holds
//! the table (`vpermps`, no memory access), AVX2 with two permutes of its halves and a blend;
//! other instruction sets read the lanes one by one from memory. The values are the same on
//! every instruction set, as `accuracy_tests::every_instruction_set_gives_the_same_bits`
//! checks.

use pulp::bytemuck;
use pulp::Simd;

/// `table[idx_i % 16]` for every lane i.
#[inline(always)]
pub(super) fn lookup16<S: Simd>(s: S, idx: S::u32s, table: &[f32; 16]) -> S::f32s {
    #[cfg(target_arch = "x86_64")]
    {
        use core::any::Any;
        use std::arch::x86_64::{__m256, __m256i, __m512, __m512i};
        // `S` is one concrete instruction set per monomorphised copy, so these tests are
        // constant and all but one branch is compiled away. In a taken branch `S::u32s` and
        // `S::f32s` are that set's register types, so the casts are between equal sizes.
        let any = &s as &dyn Any;
        if let Some(v4) = any.downcast_ref::<pulp::x86::V4>() {
            // 16 lanes, 16 entries: the permute reads the low 4 bits of each index.
            let t = bytemuck::cast::<[f32; 16], __m512>(*table);
            let r = v4.avx512f._mm512_permutexvar_ps(bytemuck::cast::<S::u32s, __m512i>(idx), t);
            return bytemuck::cast::<__m512, S::f32s>(r);
        }
        if let Some(v3) = any.downcast_ref::<pulp::x86::V3>() {
            // 8 lanes: each permute reads the low 3 bits of the index, from one half of the
            // table; bit 3, shifted into the sign bit, picks the half.
            let idx = bytemuck::cast::<S::u32s, __m256i>(idx);
            let [lo, hi]: [[f32; 8]; 2] = bytemuck::cast(*table);
            let from_lo = v3.avx2._mm256_permutevar8x32_ps(bytemuck::cast(lo), idx);
            let from_hi = v3.avx2._mm256_permutevar8x32_ps(bytemuck::cast(hi), idx);
            let bit3 = bytemuck::cast::<__m256i, __m256>(v3.avx2._mm256_slli_epi32::<28>(idx));
            return bytemuck::cast::<__m256, S::f32s>(v3.avx._mm256_blendv_ps(from_lo, from_hi, bit3));
        }
    }
    let mut out = s.splat_f32s(0.0);
    let lanes: &mut [f32] = bytemuck::cast_slice_mut(std::slice::from_mut(&mut out));
    let idx: &[u32] = bytemuck::cast_slice(std::slice::from_ref(&idx));
    for (o, &i) in lanes.iter_mut().zip(idx) {
        *o = table[(i % 16) as usize];
    }
    out
}

#[cfg(test)]
mod tests {
    use pulp::{Simd, WithSimd};

    /// Looks up indices 0..64 (wrapping past 16) a vector at a time under one instruction set.
    struct LookUp<'a>(&'a [f32; 16]);
    impl WithSimd for LookUp<'_> {
        type Output = Vec<f32>;
        #[inline(always)]
        fn with_simd<S: Simd>(self, s: S) -> Vec<f32> {
            let idx: Vec<u32> = (0..64).map(|i| i * 7 + (i >> 4)).collect();
            let mut out = vec![0f32; 64];
            let (ih, _) = S::as_simd_u32s(&idx);
            let (oh, _) = S::as_mut_simd_f32s(&mut out);
            for (o, &i) in oh.iter_mut().zip(ih) {
                *o = super::lookup16(s, i, self.0);
            }
            out
        }
    }

    #[test]
    fn every_instruction_set_reads_the_entry_of_the_low_four_bits() {
        let table: [f32; 16] = std::array::from_fn(|i| 1.0 + i as f32 * 0.25);
        let want: Vec<f32> = (0..64u32).map(|i| table[((i * 7 + (i >> 4)) % 16) as usize]).collect();
        assert_eq!(crate::simd::arch().dispatch(LookUp(&table)), want);
        assert_eq!(pulp::Arch::Scalar.dispatch(LookUp(&table)), want);
        #[cfg(target_arch = "x86_64")]
        if let Some(v3) = pulp::x86::V3::try_new() {
            assert_eq!(pulp::Arch::V3(v3).dispatch(LookUp(&table)), want);
        }
    }
}
