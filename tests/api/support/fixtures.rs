//! Accounts, organizations, stores and tokens seeded through the API (or, for what the API
//! cannot do alone, through the library functions the CLI uses).

use merchant_admin::setup::{self, SetupInput, SetupOutput};
use serde_json::{Value, json};

use super::TestApp;
use super::client::{Reply, post};

/// The password every seeded account uses.
pub const PASSWORD: &str = "correct horse battery";

impl TestApp {
    pub async fn register(&self, email: &str) -> Reply {
        self.post_json(
            "/v1/auth/register",
            &json!({"email": email, "password": PASSWORD}),
        )
        .await
    }

    pub async fn login_as(&self, email: &str, device: &str) -> Reply {
        self.post_json(
            "/v1/auth/login",
            &json!({"email": email, "password": PASSWORD, "device_name": device}),
        )
        .await
    }

    /// Registers and signs in; returns the session response.
    pub async fn signed_in(&self, email: &str) -> Value {
        self.register(email).await.expect(201);
        let r = self.login_as(email, "test device").await;
        r.expect(200);
        r.body
    }

    pub async fn refresh_with(&self, refresh_token: &str) -> Reply {
        self.post_json("/v1/auth/refresh", &json!({"refresh_token": refresh_token}))
            .await
    }

    /// Signs up and in; returns the access token and the user id.
    pub async fn member(&self, email: &str) -> (String, String) {
        let s = self.signed_in(email).await;
        (
            s["token"].as_str().unwrap().to_string(),
            s["user"]["id"].as_str().unwrap().to_string(),
        )
    }

    /// As the caller, creates the organization `org` and a store "Loja" in it; returns the
    /// store's id.
    pub async fn open_store(&self, token: &str, org: &str) -> String {
        let org = self
            .call(post(), "/v1/tenants", token, Some(json!({"name": org})))
            .await;
        org.expect(201);
        let store = self
            .call(
                post(),
                "/v1/stores",
                token,
                Some(json!({"tenant_id": org.body["id"], "name": "Loja"})),
            )
            .await;
        store.expect(201);
        store.body["id"].as_str().unwrap().to_string()
    }

    /// As the caller, issues a store API token with `scopes`; returns its value.
    pub async fn store_token(&self, token: &str, store_id: &str, scopes: Value) -> String {
        let path = format!("/v1/stores/{store_id}/api-tokens");
        let r = self
            .call(
                post(),
                &path,
                token,
                Some(json!({"name": "t", "scopes": scopes})),
            )
            .await;
        r.expect(201);
        r.body["value"].as_str().unwrap().to_string()
    }

    /// How many rows a list endpoint shows in all (its `total`), signed in as `token`.
    pub async fn total(&self, token: &str, path: &str) -> i64 {
        let sep = if path.contains('?') { '&' } else { '?' };
        let r = self
            .get_as(&format!("{path}{sep}include_total=true"), token)
            .await;
        r.expect(200);
        r.body["total"].as_i64().expect("a total")
    }

    /// Makes a user a store member directly, as `setup` does, bypassing invitations.
    pub async fn add_to_store(&self, store_id: &str, user_id: &str, role: &'static str) {
        let (store, user) = (store_id.parse().unwrap(), user_id.parse().unwrap());
        let now = merchant_admin::time::format(self.clock_now());
        self.state
            .db
            .write(move |tx| {
                merchant_admin::tenants::store::add_store_member(tx, store, user, role, &now)
            })
            .await
            .unwrap();
    }

    /// Seeds a user, organization and store through `setup`'s library function.
    pub async fn seed_owner(&self, email: &str, org: &str) -> SetupOutput {
        self.setup(email, org, false).await
    }

    /// `setup --demo`: the owner's store with the demo catalog, orders, reviews and inbox.
    pub async fn seed_demo(&self, email: &str, org: &str) -> SetupOutput {
        self.setup(email, org, true).await
    }

    async fn setup(&self, email: &str, org: &str, demo: bool) -> SetupOutput {
        let (db, now) = (self.state.db.clone(), self.clock_now());
        let input = SetupInput {
            email: email.into(),
            password: PASSWORD.into(),
            org_name: org.into(),
            store_name: format!("{org} store"),
            demo,
        };
        tokio::task::spawn_blocking(move || setup::run(&db, now, &input))
            .await
            .unwrap()
            .expect("setup")
    }

    /// Runs a `SELECT COUNT(*) ...` (or any one-integer query) against the live database,
    /// for facts the API deliberately does not show (what is stored at rest, job rows).
    pub async fn count(&self, sql: &'static str) -> i64 {
        self.state
            .db
            .read(move |c| Ok(c.query_row(sql, [], |r| r.get(0))?))
            .await
            .unwrap()
    }
}
