//! The inbox from a test's side: a chat channel, and a shopper talking through the widget's
//! public routes.

use serde_json::{Value, json};

use super::TestApp;
use super::client::{Reply, post};

/// A shopper's open conversation: its path under the widget routes and its visitor token.
pub struct Visitor {
    pub conversation_id: String,
    pub token: String,
    /// `/v1/widget/{key}/conversations/{id}`.
    pub path: String,
}

impl TestApp {
    /// Creates a chat channel in the store at `store_path` (`/v1/stores/{id}`); its key.
    pub async fn chat_channel(&self, owner: &str, store_path: &str, origins: Value) -> String {
        let r = self
            .call(
                post(),
                &format!("{store_path}/channels"),
                owner,
                Some(json!({"kind": "storefront_chat", "name": "Site chat",
                            "allowed_origins": origins})),
            )
            .await;
        r.expect(201);
        r.body["key"].as_str().unwrap().to_owned()
    }

    /// A shopper opens a conversation on the chat channel `key`.
    pub async fn visitor(&self, key: &str, contact: Value) -> Visitor {
        let r = self
            .post_json(&format!("/v1/widget/{key}/conversations"), &contact)
            .await;
        r.expect(201);
        let id = r.body["conversation_id"].as_str().unwrap().to_owned();
        Visitor {
            path: format!("/v1/widget/{key}/conversations/{id}"),
            conversation_id: id,
            token: r.body["visitor_token"].as_str().unwrap().to_owned(),
        }
    }

    /// The shopper sends `text` (with the token in `X-Visitor-Token`).
    pub async fn visitor_says(&self, v: &Visitor, text: &str) -> Reply {
        self.send(
            self.client
                .post(self.url(&format!("{}/messages", v.path)))
                .header("x-visitor-token", &v.token)
                .json(&json!({"text": text})),
        )
        .await
    }
}

impl TestApp {
    /// The team sends `text` and `files` (name, media type, bytes) as multipart to the
    /// messages path `path`.
    pub async fn send_files(
        &self,
        token: &str,
        path: &str,
        text: Option<&str>,
        files: &[(&str, &str, Vec<u8>)],
    ) -> Reply {
        let mut form = reqwest::multipart::Form::new();
        if let Some(t) = text {
            form = form.text("text", t.to_owned());
        }
        for (name, mime, data) in files {
            let part = reqwest::multipart::Part::bytes(data.clone())
                .file_name((*name).to_owned())
                .mime_str(mime)
                .unwrap();
            form = form.part("files", part);
        }
        self.send(
            self.client
                .post(self.url(path))
                .bearer_auth(token)
                .multipart(form),
        )
        .await
    }
}
