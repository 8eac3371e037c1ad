//! Outgoing e-mail over SMTP (`--smtp-url`), with lettre's blocking client: callers run
//! [`send`] off the async runtime. Knows no HTTP and no area.
//!
//! `smtp://[user:pass@]host[:port]` upgrades with STARTTLS when the server offers it
//! (`?tls=required` refuses a server that does not), `smtps://` speaks TLS from the start.
//! The password is never shown: [`SmtpConfig`]'s `Debug` redacts it.

use std::time::Duration;

use chrono::{DateTime, Utc};
use lettre::message::header::{ContentType, HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{Message, SmtpTransport, Transport};

/// How the connection to the relay is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmtpTls {
    /// Plain at first, STARTTLS when the server offers it (`smtp://`).
    Opportunistic,
    /// STARTTLS or nothing is sent (`smtp://...?tls=required`).
    Required,
    /// TLS from the first byte (`smtps://`).
    Wrapper,
}

/// Where replies are handed over: the relay of `--smtp-url`.
#[derive(Clone)]
pub struct SmtpConfig {
    pub host: String,
    pub port: u16,
    pub tls: SmtpTls,
    pub user: Option<String>,
    pub password: Option<String>,
    /// How long one SMTP command may take.
    pub timeout: Duration,
}

impl std::fmt::Debug for SmtpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl SmtpConfig {
    /// Reads `smtp://user:pass@host:port` (user and password percent-encoded). The error
    /// never repeats the URL, which may hold the password.
    pub fn parse(url: &str) -> anyhow::Result<Self> {
        let u = url::Url::parse(url).map_err(|e| anyhow::anyhow!("not a URL ({e})"))?;
        let mut tls = match u.scheme() {
            "smtp" => SmtpTls::Opportunistic,
            "smtps" => SmtpTls::Wrapper,
            other => anyhow::bail!("the scheme must be smtp or smtps, not {other:?}"),
        };
        for (k, v) in u.query_pairs() {
            match (k.as_ref(), v.as_ref(), tls) {
                ("tls", "required", SmtpTls::Opportunistic) => tls = SmtpTls::Required,
                ("tls", "opportunistic", SmtpTls::Opportunistic) => {}
                _ => anyhow::bail!("unknown parameter {k:?}; smtp:// takes only tls=required"),
            }
        }
        let host = u
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| anyhow::anyhow!("the URL names no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let decode = |s: &str| {
            percent_decode(s).ok_or_else(|| anyhow::anyhow!("user or password is not UTF-8"))
        };
        let user = (!u.username().is_empty())
            .then(|| decode(u.username()))
            .transpose()?;
        let password = u.password().map(decode).transpose()?;
        if password.is_some() != user.is_some() {
            anyhow::bail!("give both a user and a password, or neither");
        }
        let port = u.port().unwrap_or(match tls {
            SmtpTls::Wrapper => 465,
            SmtpTls::Opportunistic | SmtpTls::Required => 587,
        });
        Ok(Self {
            host,
            port,
            tls,
            user,
            password,
            timeout: Duration::from_secs(30),
        })
    }
}

fn percent_decode(s: &str) -> Option<String> {
    // `url` keeps userinfo percent-encoded; a `+` stays a `+` (this is no form).
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(std::borrow::Cow::into_owned)
}

/// One plain-text message to send.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub from: Mailbox,
    pub to: Mailbox,
    pub subject: String,
    pub text: String,
    /// `<id@domain>`, angle brackets included.
    pub message_id: String,
    pub in_reply_to: Option<String>,
    /// Oldest first, each `<..>`.
    pub references: Vec<String>,
    pub date: DateTime<Utc>,
    /// The EHLO name: the sending address's domain.
    pub hello_name: String,
}

/// Why a message did not go out.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The relay refused it for good (a 5xx answer): sending it again cannot help.
    #[error("the mail server refused the message: {0}")]
    Refused(String),
    /// A 4xx answer, a timeout or a connection problem: a later attempt may succeed.
    #[error("the mail server could not take the message now: {0}")]
    Temporary(String),
    #[error("the message could not be built: {0}")]
    Build(String),
    #[error("this server sends no e-mail: it has no --smtp-url")]
    NoRelay,
}

impl SendError {
    /// Whether another attempt cannot succeed.
    pub fn is_permanent(&self) -> bool {
        matches!(self, Self::Refused(_) | Self::Build(_) | Self::NoRelay)
    }
}

/// What a bulk message carries beyond [`Outgoing`]: an HTML alternative to the text, and
/// extra headers (a marketing mail's `List-Unsubscribe`).
#[derive(Debug, Clone, Default)]
pub struct Extras {
    /// Sent as `multipart/alternative` beside the text; the caller sanitised it.
    pub html: Option<String>,
    /// (name, value); names are ASCII header names, values one line.
    pub headers: Vec<(&'static str, String)>,
}

/// Builds `mail` and hands it to the relay. Blocking (network): run it off the runtime.
pub fn send(cfg: &SmtpConfig, mail: &Outgoing) -> Result<(), SendError> {
    send_with(cfg, mail, &Extras::default())
}

/// [`send`] with an HTML part and extra headers. Blocking (network).
pub fn send_with(cfg: &SmtpConfig, mail: &Outgoing, extras: &Extras) -> Result<(), SendError> {
    let message = build_with(mail, extras)?;
    let tls = |host: &str| {
        TlsParameters::new(host.to_owned()).map_err(|e| SendError::Build(e.to_string()))
    };
    let mut builder = SmtpTransport::builder_dangerous(cfg.host.clone())
        .port(cfg.port)
        .timeout(Some(cfg.timeout))
        .hello_name(ClientId::Domain(mail.hello_name.clone()))
        .tls(match cfg.tls {
            SmtpTls::Opportunistic => Tls::Opportunistic(tls(&cfg.host)?),
            SmtpTls::Required => Tls::Required(tls(&cfg.host)?),
            SmtpTls::Wrapper => Tls::Wrapper(tls(&cfg.host)?),
        });
    if let (Some(user), Some(password)) = (&cfg.user, &cfg.password) {
        builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
    }
    builder.build().send(&message).map(drop).map_err(|e| {
        // lettre's text carries the server's answer, never the credentials.
        if e.is_permanent() {
            SendError::Refused(e.to_string())
        } else {
            SendError::Temporary(e.to_string())
        }
    })
}

/// The message as it goes on the wire (tests and logs may look at it).
pub fn build(mail: &Outgoing) -> Result<Message, SendError> {
    build_with(mail, &Extras::default())
}

/// [`build`] with an HTML alternative and extra headers.
pub fn build_with(mail: &Outgoing, extras: &Extras) -> Result<Message, SendError> {
    let mut b = Message::builder()
        .from(mail.from.clone())
        .to(mail.to.clone())
        .subject(mail.subject.clone())
        .message_id(Some(mail.message_id.clone()))
        .date(mail.date.into());
    if let Some(parent) = &mail.in_reply_to {
        b = b.in_reply_to(parent.clone());
    }
    if !mail.references.is_empty() {
        b = b.references(mail.references.join(" "));
    }
    for (name, value) in &extras.headers {
        if value.contains(['\r', '\n']) {
            return Err(SendError::Build(format!("header {name} spans lines")));
        }
        b = b.raw_header(HeaderValue::new(
            HeaderName::new_from_ascii_str(name),
            value.clone(),
        ));
    }
    match &extras.html {
        None => b.header(ContentType::TEXT_PLAIN).body(mail.text.clone()),
        Some(html) => b.multipart(MultiPart::alternative_plain_html(
            mail.text.clone(),
            html.clone(),
        )),
    }
    .map_err(|e| SendError::Build(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::{SmtpConfig, SmtpTls};

    #[test]
    fn smtp_urls_read_with_their_tls_mode_and_credentials() {
        let c = SmtpConfig::parse("smtp://me%40shop.example:p%2Fss+w@mail.example:2525").unwrap();
        assert_eq!(
            (c.host.as_str(), c.port, c.tls),
            ("mail.example", 2525, SmtpTls::Opportunistic)
        );
        assert_eq!(c.user.as_deref(), Some("me@shop.example"));
        assert_eq!(c.password.as_deref(), Some("p/ss+w"));
        assert!(
            !format!("{c:?}").contains("p/ss"),
            "the password is redacted"
        );

        let c = SmtpConfig::parse("smtp://mail.example?tls=required").unwrap();
        assert_eq!((c.port, c.tls, c.user), (587, SmtpTls::Required, None));
        let c = SmtpConfig::parse("smtps://mail.example").unwrap();
        assert_eq!((c.port, c.tls), (465, SmtpTls::Wrapper));

        for bad in [
            "http://mail.example",
            "smtp://",
            "smtp://user@mail.example",
            "smtp://mail.example?tls=none",
            "smtps://mail.example?tls=required",
            "not a url",
        ] {
            assert!(SmtpConfig::parse(bad).is_err(), "{bad}");
        }
        let err = SmtpConfig::parse("ftp://u:hunter2@h")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("hunter2"), "{err}");
    }
}
