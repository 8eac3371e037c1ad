//! Cursors: a list position, serialized and signed with the server key together with the
//! list's scope (e.g. `orders:<store_id>`), so a tampered cursor, or one taken from another
//! list or store, is 400 `invalid_cursor`.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::Sha256;

use crate::error::{AppError, ErrorCode};

/// Bytes of the HMAC kept in a cursor.
const MAC_LEN: usize = 16;

/// The key cursors are signed with (from `hmac.key`, see `db::keys`).
#[derive(Clone)]
pub struct CursorKey(Arc<[u8]>);

impl CursorKey {
    pub fn new(key: Vec<u8>) -> Self {
        Self(key.into())
    }

    fn mac(&self, scope: &str, payload: &str) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes any key size");
        mac.update(scope.as_bytes());
        mac.update(&[0]);
        mac.update(payload.as_bytes());
        mac
    }

    pub fn encode<K: Serialize>(&self, scope: &str, position: &K) -> String {
        let json = serde_json::to_vec(position).expect("cursor positions serialize");
        let payload = URL_SAFE_NO_PAD.encode(json);
        let tag = self.mac(scope, &payload).finalize().into_bytes();
        format!("{payload}.{}", URL_SAFE_NO_PAD.encode(&tag[..MAC_LEN]))
    }

    pub fn decode<K: DeserializeOwned>(&self, scope: &str, cursor: &str) -> Result<K, AppError> {
        let invalid = || {
            AppError::new(
                ErrorCode::InvalidCursor,
                "the cursor is not valid for this list; start again without it",
            )
        };
        let (payload, tag) = cursor.split_once('.').ok_or_else(invalid)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
        // Constant-time comparison of the truncated tag.
        self.mac(scope, payload)
            .verify_truncated_left(&tag)
            .map_err(|_| invalid())?;
        let json = URL_SAFE_NO_PAD.decode(payload).map_err(|_| invalid())?;
        serde_json::from_slice(&json).map_err(|_| invalid())
    }
}

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CursorKey {
        CursorKey::new(vec![7; 32])
    }

    #[test]
    fn cursor_round_trips_and_rejects_tampering_and_other_scopes() {
        let k = key();
        let c = k.encode("orders:1", &("2026-01-01T00:00:00.000000Z", "abc"));
        let back: (String, String) = k.decode("orders:1", &c).unwrap();
        assert_eq!(back.1, "abc");

        let other_scope = k.decode::<(String, String)>("orders:2", &c).unwrap_err();
        assert_eq!(other_scope.code, ErrorCode::InvalidCursor);

        let mut tampered = c.clone();
        tampered.replace_range(0..1, if c.starts_with('W') { "X" } else { "W" });
        let err = k
            .decode::<(String, String)>("orders:1", &tampered)
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidCursor);

        let other_key = CursorKey::new(vec![8; 32]);
        assert!(
            other_key
                .decode::<(String, String)>("orders:1", &c)
                .is_err()
        );
        for junk in ["", ".", "abc", "a.b.c", "%%%.%%%"] {
            assert!(
                k.decode::<(String, String)>("orders:1", junk).is_err(),
                "{junk}"
            );
        }
    }
}
