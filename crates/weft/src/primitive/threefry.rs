//! Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers:
//! as easy as 1, 2, 3", SC 2011), the counter-based generator JAX and MLX
//! use. `RandomBits` nodes (and `ops::random`'s key splitting) are this
//! function of a key on counters, so every word depends only on the key and
//! its position: results do not depend on threads, chunking or evaluation
//! order, nor on the backend that computes them.

const ROTATIONS: [u32; 8] = [13, 15, 26, 6, 17, 29, 16, 24];

/// The threefry-2x32 block function (20 rounds) of `key` on `counter`.
pub fn threefry2x32(key: [u32; 2], counter: [u32; 2]) -> [u32; 2] {
    let ks = [key[0], key[1], 0x1BD1_1BDA ^ key[0] ^ key[1]];
    let mut x = [counter[0].wrapping_add(ks[0]), counter[1].wrapping_add(ks[1])];
    for group in 0..5usize {
        let rot = if group % 2 == 0 { &ROTATIONS[..4] } else { &ROTATIONS[4..] };
        for &r in rot {
            x[0] = x[0].wrapping_add(x[1]);
            x[1] = x[1].rotate_left(r) ^ x[0];
        }
        // Key injection after every four rounds.
        let j = group + 1;
        x[0] = x[0].wrapping_add(ks[j % 3]);
        x[1] = x[1].wrapping_add(ks[(j + 1) % 3]).wrapping_add(j as u32);
    }
    x
}

#[cfg(test)]
mod tests {
    use super::threefry2x32;

    #[test]
    fn known_answers() {
        // The Random123 known-answer vectors for threefry2x32_20.
        assert_eq!(threefry2x32([0, 0], [0, 0]), [0x6b20_0159, 0x99ba_4efe]);
        assert_eq!(threefry2x32([!0, !0], [!0, !0]), [0x1cb9_96fc, 0xbb00_2be7]);
        assert_eq!(
            threefry2x32([0x1319_8a2e, 0x0370_7344], [0x243f_6a88, 0x85a3_08d3]),
            [0xc492_3a9c, 0x483d_f7a0]
        );
    }
}
