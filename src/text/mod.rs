//! The bottom layer's text utilities: escaping repository and model text for every output
//! (`escape`), writing to stdout and stderr without panicking on a closed stream
//! (`stdio`), word wrapping under a hanging indent (`wrap`), and a small stable hash for
//! ids and fingerprints (`fnv1a`). They sit at the bottom so that prompts, plans, trust
//! and reports can all use them without importing each other.

pub mod escape;
pub mod stdio;
pub mod wrap;

/// FNV-1a, 64 bits: a tiny stable hash for finding ids and fingerprints.
pub(crate) fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}
