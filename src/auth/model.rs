//! Identity DTOs (spec 2.4, 2.6; issue 3).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ids::{SessionId, UserId};

/// The languages an account can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum Locale {
    #[serde(rename = "pt-BR")]
    PtBr,
    #[serde(rename = "en-US")]
    EnUs,
}

impl Locale {
    pub fn as_str(self) -> &'static str {
        match self {
            Locale::PtBr => "pt-BR",
            Locale::EnUs => "en-US",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pt-BR" => Some(Locale::PtBr),
            "en-US" => Some(Locale::EnUs),
            _ => None,
        }
    }

    /// A locale read back from `users.locale`: one the code does not know is an internal
    /// error, never a silent default.
    pub fn stored(s: &str) -> Result<Self, crate::error::AppError> {
        Self::parse(s).ok_or_else(|| {
            crate::error::AppError::internal(anyhow::anyhow!("stored locale {s:?} is unknown"))
        })
    }

    /// The first supported language in an `Accept-Language` header (q-values in order of
    /// appearance, as browsers send them); `pt-BR` otherwise. A bare `en` or `pt` counts.
    pub fn from_accept_language(header: Option<&str>) -> Self {
        let Some(h) = header else { return Locale::PtBr };
        for tag in h.split(',').map(|t| {
            t.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        }) {
            if tag == "pt-br" || tag == "pt" || tag.starts_with("pt-") {
                return Locale::PtBr;
            }
            if tag == "en-us" || tag == "en" || tag.starts_with("en-") {
                return Locale::EnUs;
            }
        }
        Locale::PtBr
    }
}

impl rusqlite::ToSql for Locale {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl rusqlite::types::FromSql for Locale {
    fn column_result(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        Locale::parse(v.as_str()?).ok_or(rusqlite::types::FromSqlError::InvalidType)
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterIn {
    /// An e-mail address (at most 254 characters); compared case-insensitively.
    #[schema(format = Email, max_length = 254)]
    pub email: String,
    /// At least 8 characters, at most 256 bytes (`maxLength` counts characters: a password
    /// of multi-byte characters can be refused below it).
    #[schema(min_length = 8, max_length = 256)]
    pub password: String,
}

/// Which second factors an account has turned on.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct TwoFactorOut {
    pub totp: bool,
    pub msgapp: bool,
}

/// A user account.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserOut {
    pub id: UserId,
    pub email: String,
    pub locale: Locale,
    pub two_factor: TwoFactorOut,
    pub created_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LoginIn {
    pub email: String,
    pub password: String,
    /// Labels the session in the device list; derived from User-Agent when omitted.
    pub device_name: Option<String>,
}

/// A session: the response of login (with `status`), refresh and second-factor verify.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SessionOut {
    /// Access token for `Authorization: Bearer`.
    pub token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// Seconds until `token` expires.
    pub expires_in: i64,
    /// Starts with `svc_rt_`; works once.
    pub refresh_token: String,
    /// Seconds until the unused refresh token expires.
    pub refresh_token_expires_in: i64,
    pub session_id: SessionId,
    pub user: UserOut,
}

/// The login response, told apart by `status`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum LoginOut {
    Authenticated(SessionOut),
    TwoFactorRequired(ChallengeOut),
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefreshIn {
    pub refresh_token: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MePatch {
    /// `pt-BR` or `en-US`.
    pub locale: Option<Locale>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordIn {
    pub current_password: String,
    /// At least 8 characters, at most 256 bytes, as at registration.
    #[schema(min_length = 8, max_length = 256)]
    pub new_password: String,
}

/// A row of the device list.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceSessionOut {
    pub id: SessionId,
    pub device_name: String,
    pub created_at: String,
    pub last_used_at: String,
    /// The session making this call.
    pub current: bool,
}

#[cfg(test)]
mod tests {
    use super::Locale;

    #[test]
    fn accept_language_picks_the_first_supported_tag() {
        assert_eq!(Locale::from_accept_language(None), Locale::PtBr);
        assert_eq!(
            Locale::from_accept_language(Some("en-US,en;q=0.9")),
            Locale::EnUs
        );
        assert_eq!(
            Locale::from_accept_language(Some("fr-FR, en;q=0.5")),
            Locale::EnUs
        );
        assert_eq!(Locale::from_accept_language(Some("pt-PT,en")), Locale::PtBr);
        assert_eq!(Locale::from_accept_language(Some("de, fr")), Locale::PtBr);
    }
}

/// The second step a sign-in still needs.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChallengeOut {
    pub challenge: String,
    /// `totp`, `msgapp`; ignore values you do not support.
    pub methods: Vec<&'static str>,
    /// Seconds left to finish (300).
    pub expires_in: i64,
}

/// What an authenticator app needs.
#[derive(Debug, Serialize, ToSchema)]
pub struct TotpSetupOut {
    /// Base32 secret, for typing in by hand.
    pub secret: String,
    pub otpauth_url: String,
    /// A QR code of `otpauth_url`, PNG, standard base64.
    pub qr_png_base64: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TotpCodeIn {
    pub totp_code: String,
    /// The account password; needed when the session signed in more than 10 minutes ago.
    pub password: Option<String>,
}

/// The body of a change that needs a recent sign-in; the whole body may be omitted.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReauthIn {
    /// The account password; needed when the session signed in more than 10 minutes ago.
    pub password: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PasswordConfirmIn {
    pub password: String,
}

/// Single-use recovery codes, shown once.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecoveryCodesOut {
    pub codes: Vec<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TotpVerifyIn {
    pub challenge: String,
    pub totp_code: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecoveryVerifyIn {
    pub challenge: String,
    pub recovery_code: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MsgappEnableIn {
    /// The phone in E.164 form, e.g. +5511987654321: `+` and 8 to 15 digits, the first not 0.
    #[schema(pattern = r"^\+[1-9][0-9]{7,14}$")]
    pub phone_e164: String,
    /// The account password; needed when the session signed in more than 10 minutes ago.
    pub password: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CodeIn {
    pub code: String,
}

/// Where a code went.
#[derive(Debug, Serialize, ToSchema)]
pub struct CodeSentOut {
    /// The phone, masked: `+55*******4321`.
    pub sent_to: String,
    /// Seconds the code stays valid (300).
    pub expires_in: i64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChallengeIn {
    pub challenge: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OtpVerifyIn {
    pub challenge: String,
    pub code: String,
}
