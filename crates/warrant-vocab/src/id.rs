//! Ids derived from their parts: a hash of an unambiguous encoding, each part written with its
//! length before it, so no two different lists of parts hash alike. warrant-core derives every
//! id it makes with [`derive_id`] (and re-exports it as `warrant_core::id::derive_id`); a check's
//! id is one of them.

use sha2::{Digest, Sha256};

/// Hex digits of the digest an id keeps: 128 bits, so that ids of one store do not collide by
/// chance and a collision cannot be searched for.
const ID_HEX: usize = 32;

/// A deterministic id: `prefix`, `_`, and the first 32 hex digits of a SHA-256 of the parts,
/// each part preceded by its length in bytes.
pub fn derive_id(prefix: &str, parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    hasher.update((parts.len() as u64).to_be_bytes());
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    let digest = hasher.finalize();
    let mut id = String::with_capacity(prefix.len() + 1 + ID_HEX);
    id.push_str(prefix);
    id.push('_');
    for byte in digest.iter().take(ID_HEX / 2) {
        for nibble in [byte >> 4, byte & 0xf] {
            // A nibble is always a hex digit; `from_digit` writes it lowercase.
            id.push(char::from_digit(u32::from(nibble), 16).unwrap_or('0'));
        }
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_the_first_half_of_the_digest_in_lowercase_hex() {
        // Stored ids are these digits: the encoding must not change (computed apart, with
        // Python's hashlib, from the same length-prefixed bytes).
        assert_eq!(derive_id("int", &["c1", "t1"]), "int_f590d7669363b6353bfd6d7308ab1235");
        assert_eq!(derive_id("eff", &["conv", "t9", "effect", "0"]), "eff_04472957290b7adb422c1ff938a248eb");
    }
}
