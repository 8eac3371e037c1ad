//! A tiny SMTP receiver on loopback: speaks enough SMTP (no STARTTLS, no AUTH) for lettre's
//! real client to hand it mail, records each message, and can be told to refuse.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// One message handed over: the envelope and the raw message (dot-unstuffed).
#[derive(Debug, Clone)]
pub struct Mail {
    pub mail_from: String,
    pub rcpt_to: Vec<String>,
    pub data: String,
}

impl Mail {
    /// A header's value, unfolded; None when the message has no such header.
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.data.split("\r\n\r\n").next().unwrap_or("");
        let mut found: Option<String> = None;
        let mut in_it = false;
        for line in head.split("\r\n") {
            if line.starts_with([' ', '\t']) {
                if in_it && let Some(v) = found.as_mut() {
                    v.push(' ');
                    v.push_str(line.trim());
                }
                continue;
            }
            in_it = false;
            if found.is_none()
                && let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case(name)
            {
                found = Some(v.trim().to_owned());
                in_it = true;
            }
        }
        found
    }

    pub fn body(&self) -> &str {
        self.data.split_once("\r\n\r\n").map_or("", |(_, b)| b)
    }
}

#[derive(Clone)]
pub struct SmtpReceiver {
    pub addr: SocketAddr,
    mails: Arc<Mutex<Vec<Mail>>>,
    /// The answer to `MAIL FROM` while set (`451 ...`, `550 ...`), instead of 250.
    refuse: Arc<Mutex<Option<String>>>,
    /// `MAIL FROM` commands seen: one per delivery attempt.
    attempts: Arc<Mutex<usize>>,
    /// The answer to `RCPT TO` of these addresses (lowercase), instead of 250.
    refuse_rcpt: Arc<Mutex<std::collections::HashMap<String, String>>>,
}

impl SmtpReceiver {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let rx = Self {
            addr: listener.local_addr().unwrap(),
            mails: Arc::default(),
            refuse: Arc::default(),
            attempts: Arc::default(),
            refuse_rcpt: Arc::default(),
        };
        let server = rx.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let s = server.clone();
                tokio::spawn(async move {
                    let _ = s.session(socket).await;
                });
            }
        });
        rx
    }

    /// `smtp://127.0.0.1:PORT`, for `--smtp-url`.
    pub fn url(&self) -> String {
        format!("smtp://{}", self.addr)
    }

    /// Answer `MAIL FROM` with `answer` (e.g. `451 4.3.0 try later`); None accepts again.
    pub fn refuse_with(&self, answer: Option<&str>) {
        *self.refuse.lock().unwrap() = answer.map(str::to_owned);
    }

    /// Answer `RCPT TO:<address>` with `answer` (e.g. `451 4.2.1 mailbox busy`), so one
    /// recipient's delivery fails while others go through; None accepts it again.
    pub fn refuse_rcpt(&self, address: &str, answer: Option<&str>) {
        let mut m = self.refuse_rcpt.lock().unwrap();
        match answer {
            Some(a) => m.insert(address.to_ascii_lowercase(), a.to_owned()),
            None => m.remove(&address.to_ascii_lowercase()),
        };
    }

    pub fn mails(&self) -> Vec<Mail> {
        self.mails.lock().unwrap().clone()
    }

    pub fn attempts(&self) -> usize {
        *self.attempts.lock().unwrap()
    }

    async fn session(&self, socket: tokio::net::TcpStream) -> std::io::Result<()> {
        let (read, mut write) = socket.into_split();
        let mut lines = BufReader::new(read);
        write.write_all(b"220 test.invalid ESMTP\r\n").await?;
        let mut mail: Option<Mail> = None;
        let mut line = String::new();
        loop {
            line.clear();
            if lines.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            let cmd = line.trim_end().to_owned();
            let verb = cmd
                .split([' ', ':'])
                .next()
                .unwrap_or("")
                .to_ascii_uppercase();
            let answer = match verb.as_str() {
                "EHLO" => "250-test.invalid\r\n250 8BITMIME".to_owned(),
                "HELO" | "NOOP" => "250 OK".to_owned(),
                "RSET" => {
                    mail = None;
                    "250 OK".to_owned()
                }
                "MAIL" => {
                    *self.attempts.lock().unwrap() += 1;
                    if let Some(no) = self.refuse.lock().unwrap().clone() {
                        no
                    } else {
                        mail = Some(Mail {
                            mail_from: address(&cmd),
                            rcpt_to: Vec::new(),
                            data: String::new(),
                        });
                        "250 OK".to_owned()
                    }
                }
                "RCPT" => match mail.as_mut() {
                    Some(m) => {
                        let to = address(&cmd);
                        let refused = self
                            .refuse_rcpt
                            .lock()
                            .unwrap()
                            .get(&to.to_ascii_lowercase())
                            .cloned();
                        if let Some(no) = refused {
                            no
                        } else {
                            m.rcpt_to.push(to);
                            "250 OK".to_owned()
                        }
                    }
                    None => "503 MAIL first".to_owned(),
                },
                "DATA" => {
                    let Some(mut m) = mail.take() else {
                        write.write_all(b"503 MAIL first\r\n").await?;
                        continue;
                    };
                    write.write_all(b"354 go ahead\r\n").await?;
                    let mut data = String::new();
                    loop {
                        line.clear();
                        if lines.read_line(&mut line).await? == 0 {
                            return Ok(());
                        }
                        if line == ".\r\n" {
                            break;
                        }
                        // Dot-unstuffing (RFC 5321 4.5.2).
                        data.push_str(line.strip_prefix('.').unwrap_or(&line));
                    }
                    m.data = data;
                    self.mails.lock().unwrap().push(m);
                    "250 OK queued".to_owned()
                }
                "QUIT" => {
                    write.write_all(b"221 bye\r\n").await?;
                    return Ok(());
                }
                _ => "502 unknown command".to_owned(),
            };
            write.write_all(format!("{answer}\r\n").as_bytes()).await?;
        }
    }
}

/// The address of `MAIL FROM:<a>` or `RCPT TO:<a>`.
fn address(cmd: &str) -> String {
    cmd.split_once('<')
        .and_then(|(_, r)| r.split_once('>'))
        .map(|(a, _)| a.to_owned())
        .unwrap_or_default()
}
