//! Sending an out-of-app copy: one [`NotificationSend`] job per delivery record, retried
//! with the queue's backoff. Every failed attempt is written on the record
//! (`notification_send_failed` and the provider's answer); a refusal retrying cannot fix, or
//! the last attempt, leaves it `failed`.

use lettre::message::Mailbox;
use serde::{Deserialize, Serialize};

use super::store;
use crate::auth::model::Locale;
use crate::config::MsgappConfig;
use crate::ids::NotificationDeliveryId;
use crate::jobs::{self, JobKind};
use crate::state::AppState;

/// Sends one copy of a notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationSend {
    pub delivery_id: NotificationDeliveryId,
}

impl JobKind for NotificationSend {
    const KIND: &'static str = "notification_send";

    /// 10 s, 20 s, 40 s, 80 s, 160 s: about five minutes of retries.
    fn max_attempts(&self) -> u32 {
        6
    }
}

/// The template a messaging-app copy goes out with (the provider accepts only approved
/// templates for messages the business starts); its parameters are the store, the title and
/// the body.
pub const MSGAPP_TEMPLATE: &str = "store_notification";

/// The longest template parameter sent, in characters (the provider caps their length).
const MAX_PARAM_CHARS: usize = 200;

/// Why an attempt failed, and whether another can help.
struct Failure {
    message: String,
    permanent: bool,
}

/// The job handler.
pub async fn send(st: &AppState, job: NotificationSend) -> anyhow::Result<()> {
    let id = job.delivery_id;
    let Some(p) = st.db.read(move |c| store::pending(c, id)).await? else {
        return Ok(()); // purged with its notification
    };
    if p.status != "pending" {
        return Ok(()); // settled by an earlier run of this job
    }
    let result = match p.channel.as_str() {
        "email" => send_email(st, &p).await,
        _ => send_msgapp(st, &p).await,
    };
    let now = st.clock.now();
    let Err(f) = result else {
        st.db
            .write_to_finish(move |tx| store::record_attempt(tx, id, Ok(()), now))
            .await?;
        return Ok(());
    };
    let last = f.permanent || jobs::attempt().is_none_or(jobs::Attempt::is_last);
    tracing::warn!(delivery = %id, channel = p.channel, error = %f.message, last,
                   "notification copy not sent");
    let message = f.message.clone();
    st.db
        .write_to_finish(move |tx| store::record_attempt(tx, id, Err((&message, last)), now))
        .await?;
    // A refusal is settled on the record; anything else is the job's error, so it retries.
    if f.permanent {
        Ok(())
    } else {
        Err(anyhow::anyhow!(f.message))
    }
}

/// `notifications@<the public URL's host>`: the server has no address of its own.
fn sender(st: &AppState) -> Mailbox {
    let host = url::Url::parse(st.public_url())
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned))
        .filter(|h| h.contains('.') && !h.starts_with('['))
        .unwrap_or_else(|| "localhost".to_owned());
    format!("merchant-admin <notifications@{host}>")
        .parse()
        .unwrap_or_else(|_| {
            "merchant-admin <notifications@localhost>"
                .parse()
                .expect("a valid address")
        })
}

async fn send_email(st: &AppState, p: &store::Pending) -> Result<(), Failure> {
    let Some(smtp) = st.cfg.smtp.clone() else {
        return Err(Failure {
            message: crate::mail::SendError::NoRelay.to_string(),
            permanent: true,
        });
    };
    let to: Mailbox = p.email.parse().map_err(|_| Failure {
        message: "the member's e-mail address cannot be sent to".into(),
        permanent: true,
    })?;
    let from = sender(st);
    let mail = crate::mail::Outgoing {
        hello_name: from.email.domain().to_owned(),
        message_id: format!("<{}@{}>", uuid::Uuid::now_v7(), from.email.domain()),
        from,
        to,
        subject: format!("[{}] {}", p.store_name, p.title),
        text: format!("{}\n\n{}\n", p.title, p.body),
        in_reply_to: None,
        references: Vec::new(),
        date: st.clock.now(),
    };
    crate::threads::run_blocking(move || crate::mail::send(&smtp, &mail))
        .await
        .map_err(|e| Failure {
            permanent: e.is_permanent(),
            message: e.to_string(),
        })
}

async fn send_msgapp(st: &AppState, p: &store::Pending) -> Result<(), Failure> {
    let Some(phone) = p.phone.as_deref() else {
        return Err(Failure {
            message: "the member has no verified messaging-app number".into(),
            permanent: true,
        });
    };
    // The platform's own number, the one sign-in codes come from.
    let number = match &st.cfg.msgapp {
        MsgappConfig::Cloud {
            phone_number_id, ..
        } => phone_number_id.clone(),
        MsgappConfig::Log => String::new(),
    };
    let language = match Locale::parse(&p.locale).unwrap_or(Locale::EnUs) {
        Locale::PtBr => "pt_BR",
        Locale::EnUs => "en_US",
    };
    // Template parameters refuse newlines, tabs and long runs of spaces, and are short.
    let param = |s: &str| -> String {
        let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
        match one_line.char_indices().nth(MAX_PARAM_CHARS) {
            Some((cut, _)) => format!("{}…", &one_line[..cut]),
            None => one_line,
        }
    };
    let parameters = [param(&p.store_name), param(&p.title), param(&p.body)];
    let msg = crate::msgapp::TemplateMessage {
        phone_number_id: &number,
        to: phone,
        template: MSGAPP_TEMPLATE,
        language,
        parameters: &parameters,
    };
    crate::msgapp::send_template(&st.cfg.msgapp, &st.db, msg, st.clock.now())
        .await
        .map(drop)
        .map_err(|e| Failure {
            permanent: e.is_permanent(),
            message: e.to_string(),
        })
}
