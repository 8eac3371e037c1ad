//! Text rules shared by every area: the e-mail form accounts, invites, customers and reviews
//! store, and URL slugs. A leaf utility: it names no other module of the crate.

/// Trimmed and lowercased, so e-mails compare case-insensitively. The one normalization:
/// sign-in, setup, invites, customers, reviews and `users` all store and look up this form.
pub fn normalize_email(email: &str) -> String {
    email.trim().to_lowercase()
}

/// A deliberately loose check (one `@`, a dot in the domain, no spaces); the identity issue
/// owns the full rule.
pub fn looks_like_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !s.contains(char::is_whitespace)
        && !domain.contains('@')
        && s.len() <= 254
}

/// The URL-friendly name: lowercase, accents folded, words joined by dashes.
pub fn slugify(name: &str) -> String {
    let s = slug::slugify(name);
    if s.is_empty() { "store".into() } else { s }
}

/// Declares an enum of snake_case text values (a status, a kind) with serde, OpenAPI,
/// `ALL`, `as_str`, `parse`, and SQLite binding: a stored value this version does not know
/// reads as an error, never as a default.
#[macro_export]
macro_rules! text_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:tt),* $(,)? }) => {
        // The caller's attributes after the derive, so they may be its helpers (`#[schema(as = ..)]`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
        $(#[$meta])*
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),*
        }

        impl $name {
            pub const ALL: &'static [Self] = &[$(Self::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),* }
            }

            pub fn parse(s: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s)
            }
        }

        impl rusqlite::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(rusqlite::types::ToSqlOutput::from(self.as_str()))
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(
                v: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                let s = v.as_str()?;
                Self::parse(s).ok_or_else(|| {
                    rusqlite::types::FromSqlError::Other(
                        format!("{s:?} is not a {}", stringify!($name)).into(),
                    )
                })
            }
        }
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn slugs_fold_accents_and_join_with_dashes() {
        assert_eq!(
            super::slugify("Café São Paulo  Ltda."),
            "cafe-sao-paulo-ltda"
        );
        assert_eq!(super::slugify("!!!"), "store");
    }

    #[test]
    fn email_check_is_loose_but_not_empty() {
        assert!(super::looks_like_email("ana@example.com"));
        for bad in [
            "",
            "ana",
            "ana@",
            "@x.com",
            "ana@x",
            "a b@x.com",
            "ana@x.com.",
        ] {
            assert!(!super::looks_like_email(bad), "{bad}");
        }
    }
}
