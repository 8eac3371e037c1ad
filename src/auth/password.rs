//! Password hashing: argon2id with OWASP's parameters (m = 19456 KiB, t = 2, p = 1), stored
//! as PHC strings. Hashing is CPU-heavy: callers on the async runtime go through [`Hasher`],
//! which runs it on its own threads; never call these directly.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::error::AppError;

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

/// The bounded pool password work runs on: `workers` dedicated threads at lowered CPU
/// priority (nice 10), so a flood of sign-ins takes what the machine has spare rather than
/// starving other requests. Callers wait asynchronously, holding no thread.
#[derive(Clone)]
pub struct Hasher {
    pool: crate::threads::Threads,
    /// A hash of a random password, verified against for unknown e-mails so they take as
    /// long as a wrong password.
    dummy: std::sync::Arc<std::sync::OnceLock<String>>,
}

/// Hashing threads run at nice 10.
const HASHING_NICE: i8 = 10;

fn lower_priority() {
    crate::threads::lower_current_priority(HASHING_NICE);
}

impl Hasher {
    /// `workers` threads, with room for `queue` hashes waiting for one; past that, callers
    /// are answered 503.
    pub fn new(workers: usize, queue: usize) -> Self {
        Self {
            pool: crate::threads::Threads::new("argon2", workers, queue, lower_priority),
            dummy: std::sync::Arc::default(),
        }
    }

    /// Runs `f` on the hashing threads; 503 when their queue is full.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, AppError> {
        // Tests stage a busy hasher with `hasher::run=sleep(..)`.
        #[cfg(feature = "failpoints")]
        let f = move || {
            fail::fail_point!("hasher::run");
            f()
        };
        Ok(self.pool.run(f).await?)
    }

    /// 503 when the hashing queue is full.
    pub async fn hash(&self, password: String) -> Result<String, AppError> {
        self.run(move || hash(&password))
            .await?
            .map_err(AppError::internal)
    }

    /// Checks `password` against `phc`, or against a dummy hash when there is none (unknown
    /// account), so both cases cost the same. Returns false for the dummy; 503 when the
    /// hashing queue is full.
    pub async fn verify(&self, password: String, phc: Option<String>) -> Result<bool, AppError> {
        let dummy = self.dummy.clone();
        self.run(move || match phc {
            Some(phc) => verify(&password, &phc),
            None => {
                let d =
                    dummy.get_or_init(|| hash(&crate::secrets::new_token("")).unwrap_or_default());
                let _ = verify(&password, d);
                false
            }
        })
        .await
    }
}
