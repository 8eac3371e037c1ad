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

/// Whether `hex_tag` is the hex HMAC-SHA256 of `body` keyed with `key`: how a webhook we
/// receive proves its sender. Compared in constant time by `hmac`.
pub fn hmac_sha256_hex_matches(key: &[u8], body: &[u8], hex_tag: &str) -> bool {
    use hmac::{Hmac, Mac};
    let Some(tag) = unhex(hex_tag) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key size");
    mac.update(body);
    mac.verify_slice(&tag).is_ok()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
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

/// The file, in the data directory, holding the key that seals secrets we must read back
/// (webhook signing secrets). It is not in the database, so a leaked backup alone does not
/// reveal them; operators keep it with their backups (README).
pub const SEAL_KEY_FILE: &str = "secrets.key";

/// Seals and opens secrets with XChaCha20-Poly1305 under the data directory's key. The
/// associated data (the owning row's id) stops a sealed value from being moved to another row.
#[derive(Clone)]
pub struct SecretBox {
    cipher: std::sync::Arc<chacha20poly1305::XChaCha20Poly1305>,
}

impl SecretBox {
    /// Loads `<data_dir>/secrets.key`, creating it (mode 0600) with a random key if absent.
    pub fn open(data_dir: &std::path::Path) -> anyhow::Result<Self> {
        use anyhow::Context;
        use chacha20poly1305::KeyInit;
        let path = data_dir.join(SEAL_KEY_FILE);
        let key = match std::fs::read(&path) {
            Ok(k) => k,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut k = vec![0u8; 32];
                rand::rng().fill_bytes(&mut k);
                write_private(&path, &k).with_context(|| format!("creating {}", path.display()))?;
                k
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let cipher = chacha20poly1305::XChaCha20Poly1305::new_from_slice(&key)
            .map_err(|_| anyhow::anyhow!("{} must hold exactly 32 bytes", path.display()))?;
        Ok(Self {
            cipher: std::sync::Arc::new(cipher),
        })
    }

    /// nonce (24 bytes) || ciphertext.
    pub fn seal(&self, plain: &str, aad: &str) -> Vec<u8> {
        self.seal_bytes(plain.as_bytes(), aad)
    }

    /// None when the value was sealed under another key (a database restored without its
    /// `secrets.key`) or for another row.
    pub fn open_sealed(&self, sealed: &[u8], aad: &str) -> Option<String> {
        String::from_utf8(self.open_bytes(sealed, aad)?).ok()
    }

    /// [`SecretBox::seal`] for bytes that need not be text (a stored response body).
    pub fn seal_bytes(&self, plain: &[u8], aad: &str) -> Vec<u8> {
        use chacha20poly1305::aead::{Aead, Payload};
        let mut nonce = [0u8; 24];
        rand::rng().fill_bytes(&mut nonce);
        let sealed = self
            .cipher
            .encrypt(
                (&nonce).into(),
                Payload {
                    msg: plain,
                    aad: aad.as_bytes(),
                },
            )
            .expect("sealing in memory does not fail");
        [nonce.as_slice(), &sealed].concat()
    }

    pub fn open_bytes(&self, sealed: &[u8], aad: &str) -> Option<Vec<u8>> {
        use chacha20poly1305::aead::{Aead, Payload};
        if sealed.len() < 24 {
            return None;
        }
        let (nonce, msg) = sealed.split_at(24);
        self.cipher
            .decrypt(
                nonce.into(),
                Payload {
                    msg,
                    aad: aad.as_bytes(),
                },
            )
            .ok()
    }
}

impl std::fmt::Debug for SecretBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretBox(..)")
    }
}

/// Writes a new 0600 file whole or not at all (a crash leaves no empty key file behind), and
/// durably: once this returns, the file survives a power cut.
pub fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut f = opts.open(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    // The rename is durable only once the directory entry is.
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            std::path::Path::new(".")
        } else {
            dir
        };
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::unhex;
    #[test]
    fn signature_hex_is_read_strictly() {
        assert_eq!(unhex("00ff10"), Some(vec![0, 255, 16]));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex("é1"), None);
    }

    #[test]
    fn sealed_secrets_open_only_with_their_key_and_row() {
        let dir = tempfile::tempdir().unwrap();
        let a = super::SecretBox::open(dir.path()).unwrap();
        let sealed = a.seal("whsec_abc", "row-1");
        assert!(!sealed.windows(9).any(|w| w == b"whsec_abc"));
        assert_eq!(
            a.open_sealed(&sealed, "row-1").as_deref(),
            Some("whsec_abc")
        );
        assert_eq!(a.open_sealed(&sealed, "row-2"), None);
        // The same directory gives the same key back; another directory does not.
        let again = super::SecretBox::open(dir.path()).unwrap();
        assert_eq!(
            again.open_sealed(&sealed, "row-1").as_deref(),
            Some("whsec_abc")
        );
        let other = super::SecretBox::open(tempfile::tempdir().unwrap().path()).unwrap();
        assert_eq!(other.open_sealed(&sealed, "row-1"), None);
    }

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
