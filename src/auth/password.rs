//! Password hashing: argon2id with OWASP's parameters (m = 19456 KiB, t = 2, p = 1), stored
//! as PHC strings. Hashing is CPU-heavy: callers on the async runtime go through
//! `db::run_blocking`, never call these directly.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

pub const MIN_LEN: usize = 8;
pub const MAX_BYTES: usize = 256;

fn hasher() -> Argon2<'static> {
    let params = Params::new(19_456, 2, 1, None).expect("OWASP argon2 parameters are valid");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

pub fn hash(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut argon2::password_hash::rand_core::OsRng);
    Ok(hasher()
        .hash_password(password.as_bytes(), &salt)
        .map_err(|e| anyhow::anyhow!("hashing a password: {e}"))?
        .to_string())
}

/// Constant-time check of `password` against a stored PHC string.
pub fn verify(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc).is_ok_and(|h| hasher().verify_password(password.as_bytes(), &h).is_ok())
}

/// The password rule shared by every endpoint that sets one.
pub fn check_rules(password: &str) -> Result<(), &'static str> {
    if password.chars().count() < MIN_LEN {
        return Err("must be at least 8 characters");
    }
    if password.len() > MAX_BYTES {
        return Err("must be at most 256 bytes");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn hashes_are_argon2id_and_verify() {
        let h = super::hash("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{h}");
        assert!(super::verify("correct horse", &h));
        assert!(!super::verify("wrong horse", &h));
        assert!(!super::verify("correct horse", "not a hash"));
    }
}
