//! Secret values handed to clients (tokens, codes): generated from a CSPRNG, stored only as
//! sha256 hashes, compared in constant time.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// `prefix` followed by 43 URL-safe base64 characters (32 random bytes, 256 bits).
pub fn new_token(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// The stored form of a token: its sha256. Lookups go by this hash, so the raw value never
/// reaches the database and a timing side channel on the index reveals nothing useful.
pub fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// The stored form of a short secret (a six-digit code) or of data that may contain one: an
/// HMAC with a server key, so the database alone does not let anyone reverse it.
pub fn keyed_hash(key: &[u8], value: &[u8]) -> Vec<u8> {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key size");
    mac.update(value);
    mac.finalize().into_bytes().to_vec()
}

/// Constant-time equality for secrets held in memory.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.ct_eq(b).into()
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_prefixed_long_and_distinct() {
        let a = super::new_token("svc_rt_");
        let b = super::new_token("svc_rt_");
        assert!(a.starts_with("svc_rt_"));
        assert_eq!(a.len(), 7 + 43);
        assert_ne!(a, b);
        assert_eq!(super::hash(&a).len(), 32);
        assert!(super::same(&super::hash(&a), &super::hash(&a)));
        assert!(!super::same(&super::hash(&a), &super::hash(&b)));
    }
}
