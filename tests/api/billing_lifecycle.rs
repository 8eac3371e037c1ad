//! Billing's lifecycle (issue 17; spec 2.12, 3, 4.4): invoices paid by Pix, the daily
//! job's transitions on the test clock, plan changes, cancel and resume, and the signed
//! payment webhook. The platform webhook is a local receiver; the clock is the test's.

use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::support::{Receiver, TestApp, post, spawn_app_with};

const PIX_SECRET: &str = "pix-webhook-secret-1234";

fn put() -> reqwest::Method {
    reqwest::Method::PUT
}

/// An organization with one store, its owner signed in, on an app with Pix configured,
/// no workers (the test runs the daily job) and a platform webhook receiver.
struct Org {
    app: TestApp,
    /// Signed in again whenever the clock moves (access tokens last minutes).
    session: std::sync::Mutex<String>,
    tenant: String,
    store: String,
    platform: Receiver,
}

async fn org_on(plan: &str) -> Org {
    org_with(plan, |_| {}).await
}

async fn org_with(plan: &str, tune: impl FnOnce(&mut merchant_admin::config::Config)) -> Org {
    let platform = Receiver::start().await;
    let url = platform.url.clone();
    let app = spawn_app_with(move |c| {
        c.workers = 0;
        c.billing.pix = Some(merchant_admin::billing::pix::Merchant {
            key: "financeiro@operadora.com.br".into(),
            name: "Operadora Ltda".into(),
            city: "São Paulo".into(),
        });
        c.billing.pix_webhook_secret = Some(PIX_SECRET.into());
        c.platform_webhook = Some(merchant_admin::config::PlatformWebhook {
            url,
            secret: "platform-secret-123456".into(),
        });
        tune(c);
    })
    .await;
    let (token, _) = app.member("owner@example.com").await;
    let org = app
        .call(
            post(),
            "/v1/tenants",
            &token,
            Some(json!({"name": "Org", "plan_code": plan})),
        )
        .await;
    org.expect(201);
    let tenant = org.body["id"].as_str().unwrap().to_owned();
    let store = app
        .call(
            post(),
            "/v1/stores",
            &token,
            Some(json!({"tenant_id": tenant, "name": "Loja"})),
        )
        .await;
    store.expect(201);
    let store = store.body["id"].as_str().unwrap().to_owned();
    Org {
        app,
        session: std::sync::Mutex::new(token),
        tenant,
        store,
        platform,
    }
}

fn at(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("a time: {v}")))
        .unwrap()
        .to_utc()
}

impl Org {
    fn token(&self) -> String {
        self.session.lock().unwrap().clone()
    }

    fn path(&self, rest: &str) -> String {
        format!("/v1/tenants/{}{rest}", self.tenant)
    }

    async fn subscription(&self) -> Value {
        let r = self
            .app
            .get_as(&self.path("/subscription"), &self.token())
            .await;
        r.expect(200);
        r.body.clone()
    }

    async fn invoices(&self) -> Vec<Value> {
        let r = self
            .app
            .get_as(&self.path("/invoices"), &self.token())
            .await;
        r.expect(200);
        r.body["data"].as_array().unwrap().clone()
    }

    /// `POST /v1/stores` in the organization.
    async fn add_store(&self, name: &str) -> crate::support::Reply {
        self.app
            .call(
                post(),
                "/v1/stores",
                &self.token(),
                Some(json!({"tenant_id": self.tenant, "name": name})),
            )
            .await
    }

    /// `PUT .../subscription` with `body`.
    async fn change(&self, body: Value) -> crate::support::Reply {
        self.app
            .call(
                put(),
                &self.path("/subscription"),
                &self.token(),
                Some(body),
            )
            .await
    }

    async fn act(&self, what: &str) -> crate::support::Reply {
        self.app
            .call(
                post(),
                &self.path(&format!("/subscription/{what}")),
                &self.token(),
                None,
            )
            .await
    }

    /// Moves the clock on once the deliveries in flight are done: a jump past their lease
    /// would hand them to the dispatcher again, and the receiver would see them twice.
    async fn advance(&self, d: Duration) {
        self.app.settled().await;
        self.app.clock.advance(d);
    }

    /// Moves the clock to `t` and runs the daily job there.
    async fn day(&self, t: DateTime<Utc>) {
        let now = self.app.clock_now();
        assert!(t >= now, "the clock only goes forward");
        self.advance(t - now).await;
        self.app.run_billing_day().await;
        self.sign_in_again().await;
    }

    async fn sign_in_again(&self) {
        let r = self.app.login_as("owner@example.com", "laptop").await;
        r.expect(200);
        *self.session.lock().unwrap() = r.body["token"].as_str().unwrap().to_owned();
    }

    /// The payment provider's webhook for `txid`, signed with `secret`.
    async fn pix_paid(&self, txid: &str, amount: i64, secret: &str) -> crate::support::Reply {
        let body = json!({"txid": txid, "amount_cents": amount,
                          "paid_at": merchant_admin::time::format(self.app.clock_now())})
        .to_string();
        self.app
            .send(
                self.app
                    .client
                    .post(self.app.url("/v1/billing/pix/webhook"))
                    .header("content-type", "application/json")
                    .header("x-signature", sign(secret, body.as_bytes()))
                    .body(body),
            )
            .await
    }

    /// The audit actions recorded for the organization's subscription and invoices.
    async fn audit(&self) -> Vec<String> {
        let t = self.tenant.clone();
        self.app
            .state
            .db
            .read(move |c| {
                Ok(c.prepare(
                    "SELECT action FROM audit_log WHERE tenant_id = ?1 AND store_id IS NULL
                       AND (resource_type IN ('subscription', 'invoice'))
                     ORDER BY created_at, rowid",
                )?
                .query_map([t], |r| r.get(0))?
                .collect::<Result<_, _>>()?)
            })
            .await
            .unwrap()
    }

    /// The first `n` platform events delivered (deliveries run in parallel: ordered by
    /// their time, then name), by name with their data, less the owner's `user.created`.
    async fn events(&self, n: usize) -> Vec<(String, Value)> {
        let mut all: Vec<(i64, String, Value)> = self
            .platform
            .wait_for(n)
            .await
            .iter()
            .map(|h| {
                let b = h.json();
                let name = b["event"].as_str().unwrap().to_owned();
                (b["timestamp"].as_i64().unwrap(), name, b["data"].clone())
            })
            .filter(|(_, e, _)| e != "user.created")
            .collect();
        all.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        all.into_iter().map(|(_, e, d)| (e, d)).collect()
    }
}

fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A trial that ends unpaid: past_due with its first invoice open; suspended after the
/// grace days (stores can no longer be added); canceled 30 days later, the invoice voided.
/// Each move is audited and sent to the platform webhook.
#[tokio::test]
async fn an_unpaid_trial_goes_past_due_then_suspended_then_canceled() {
    let o = org_on("starter").await;
    let s = o.subscription().await;
    let trial_end = at(&s["trial_ends_at"]);
    // Nothing is due a week and a day before the trial ends.
    o.day(trial_end - Duration::days(8)).await;
    assert!(o.invoices().await.is_empty());
    // A week before, the first invoice is issued, due when the trial ends.
    o.day(trial_end - Duration::days(7)).await;
    let inv = o.invoices().await;
    assert_eq!(inv.len(), 1);
    let first = &inv[0];
    assert_eq!(first["status"], "open");
    assert_eq!(first["billing_reason"], "subscription_create");
    assert_eq!(first["amount_cents"], 4_900);
    assert_eq!(first["currency"], "BRL");
    assert_eq!(at(&first["period_start"]), trial_end);
    assert_eq!(at(&first["due_at"]), trial_end);
    assert!(first["number"].as_str().unwrap().starts_with("INV-"));
    assert_eq!(o.subscription().await["status"], "trialing");
    assert_eq!(o.subscription().await["open_invoice"]["id"], first["id"]);

    // The trial ends unpaid.
    o.day(trial_end + Duration::hours(1)).await;
    let s = o.subscription().await;
    assert_eq!(s["status"], "past_due");
    assert_eq!(at(&s["current_period_start"]), trial_end);
    assert_eq!(s["open_invoice"]["id"], first["id"]);
    // Within the grace days nothing more happens.
    o.day(trial_end + Duration::days(7)).await;
    assert_eq!(o.subscription().await["status"], "past_due");
    o.day(trial_end + Duration::days(7) + Duration::hours(2))
        .await;
    assert_eq!(o.subscription().await["status"], "suspended");
    o.add_store("Two")
        .await
        .expect_error(402, "subscription_inactive");
    // Thirty days suspended: canceled, and the invoice can no longer be paid.
    o.day(trial_end + Duration::days(37)).await;
    assert_eq!(o.subscription().await["status"], "suspended");
    o.day(trial_end + Duration::days(37) + Duration::hours(3))
        .await;
    let s = o.subscription().await;
    assert_eq!(s["status"], "canceled");
    assert!(s["canceled_at"].is_string());
    assert!(s["open_invoice"].is_null());
    assert_eq!(o.invoices().await[0]["status"], "void");
    assert!(o.invoices().await[0]["pix"].is_null());
    // Running the job again changes nothing.
    o.day(trial_end + Duration::days(38)).await;
    assert_eq!(
        o.audit().await,
        [
            "invoice.issued",
            "subscription.past_due",
            "subscription.suspended",
            "invoice.voided",
            "subscription.canceled"
        ]
    );
    let events = o.events(4).await;
    let statuses: Vec<&str> = events
        .iter()
        .map(|(e, d)| {
            assert_eq!(e, "subscription.updated");
            assert_eq!(d["tenant_id"], o.tenant.as_str());
            d["status"].as_str().unwrap()
        })
        .collect();
    assert_eq!(statuses, ["past_due", "suspended", "canceled"]);
}

/// Paying the first invoice during the trial activates the subscription; the trial's days
/// are kept (the paid period starts when it ends). A renewal is issued a week before the
/// period ends; unpaid at the end, past_due; paid, active again.
#[tokio::test]
async fn paying_by_pix_activates_and_renewals_follow_the_period() {
    let o = org_on("growth").await;
    let trial_end = at(&o.subscription().await["trial_ends_at"]);
    let r = o.act("pay").await;
    r.expect(200);
    let inv = r.body.clone();
    assert_eq!(inv["status"], "open");
    assert_eq!(inv["amount_cents"], 14_900);
    assert_eq!(inv["billing_reason"], "subscription_create");
    let code = inv["pix"]["copy_paste"].as_str().unwrap();
    let txid = inv["txid"].as_str().unwrap();
    assert!(code.starts_with("000201"), "{code}");
    assert!(code.contains("br.gov.bcb.pix"));
    assert!(code.contains("5406149.00"), "the amount, field 54: {code}");
    assert!(code.contains(txid));
    assert!(at(&inv["pix"]["expires_at"]) > at(&inv["due_at"]));
    // The QR code is a PNG, for those who may read billing.
    let qr = inv["pix"]["qr_png_url"].as_str().unwrap();
    let path = &qr[qr.find("/v1/").unwrap()..];
    let png = o
        .app
        .send(o.app.client.get(o.app.url(path)).bearer_auth(o.token()))
        .await;
    png.expect(200);
    assert_eq!(png.header("content-type"), Some("image/png"));
    o.app.get(path).await.expect(401);
    // Asking again answers the same invoice.
    assert_eq!(o.act("pay").await.body["id"], inv["id"]);

    o.advance(Duration::seconds(3600)).await;
    o.sign_in_again().await;
    o.pix_paid(txid, 14_900, PIX_SECRET).await.expect(200);
    let s = o.subscription().await;
    assert_eq!(s["status"], "active");
    assert!(s["open_invoice"].is_null());
    assert_eq!(
        at(&s["current_period_end"]),
        trial_end,
        "the trial's days are kept"
    );
    let paid = &o.invoices().await[0];
    assert_eq!(paid["status"], "paid");
    assert!(paid["pix"].is_null());
    // Nothing to pay now: the next period is paid.
    o.act("pay").await.expect_error(409, "conflict");

    // The trial ends: the paid period begins.
    o.day(trial_end).await;
    let s = o.subscription().await;
    assert_eq!(s["status"], "active");
    assert_eq!(at(&s["current_period_start"]), trial_end);
    let end = at(&s["current_period_end"]);
    assert_eq!(
        end,
        trial_end
            .checked_add_months(chrono::Months::new(1))
            .unwrap()
    );
    // A week before it ends, the renewal.
    o.day(end - Duration::days(7)).await;
    let renewal = o.subscription().await["open_invoice"].clone();
    assert_eq!(renewal["billing_reason"], "subscription_cycle");
    assert_eq!(at(&renewal["period_start"]), end);
    assert_eq!(o.subscription().await["status"], "active");
    o.day(end + Duration::minutes(5)).await;
    assert_eq!(o.subscription().await["status"], "past_due");
    o.advance(Duration::minutes(1)).await;
    o.pix_paid(renewal["txid"].as_str().unwrap(), 14_900, PIX_SECRET)
        .await
        .expect(200);
    let s = o.subscription().await;
    assert_eq!(s["status"], "active");
    assert_eq!(at(&s["current_period_start"]), end);

    assert_eq!(
        o.audit().await,
        [
            "invoice.issued",
            "invoice.paid",
            "subscription.active",
            "subscription.updated",
            "invoice.issued",
            "subscription.past_due",
            "invoice.paid",
            "subscription.active"
        ]
    );
    let names: Vec<String> = o.events(7).await.into_iter().map(|(e, _)| e).collect();
    assert_eq!(
        names,
        [
            "invoice.paid",
            "subscription.updated",
            "subscription.updated",
            "subscription.updated",
            "invoice.paid",
            "subscription.updated"
        ]
    );
}

/// The webhook believes only a valid signature; it is idempotent by txid, refuses an
/// amount below the invoice's, and a voided invoice.
#[tokio::test]
async fn the_pix_webhook_is_signed_idempotent_and_checks_the_amount() {
    let o = org_on("starter").await;
    let inv = o.act("pay").await.body.clone();
    let txid = inv["txid"].as_str().unwrap();
    // Unsigned, or signed with another secret: 401, nothing paid.
    let r = o
        .app
        .post_json(
            "/v1/billing/pix/webhook",
            &json!({"txid": txid, "amount_cents": 4_900, "paid_at": "2026-01-01T00:00:00Z"}),
        )
        .await;
    r.expect_error(401, "unauthorized");
    o.pix_paid(txid, 4_900, "another-secret")
        .await
        .expect_error(401, "unauthorized");
    o.pix_paid("NOSUCHTXID", 4_900, PIX_SECRET)
        .await
        .expect_error(404, "not_found");
    let short = o.pix_paid(txid, 4_899, PIX_SECRET).await;
    short.expect_error(422, "payment_amount_mismatch");
    assert_eq!(short.body["details"]["amount_cents"], 4_900);
    assert_eq!(o.subscription().await["status"], "trialing");
    assert_eq!(o.invoices().await[0]["status"], "open");
    // The money has arrived all the same: both are kept for the operator, a repeated
    // delivery once.
    o.pix_paid("NOSUCHTXID", 4_900, PIX_SECRET)
        .await
        .expect_error(404, "not_found");
    assert_eq!(
        o.app
            .count("SELECT COUNT(*) FROM pix_unapplied WHERE reason IN ('unknown_txid', 'amount_short')")
            .await,
        2
    );

    let r = o.pix_paid(txid, 4_900, PIX_SECRET).await;
    r.expect(200);
    assert_eq!(r.body["status"], "paid");
    // The provider delivers again: the same answer, nothing paid twice.
    let again = o.pix_paid(txid, 4_900, PIX_SECRET).await;
    again.expect(200);
    assert_eq!(again.body["paid_at"], r.body["paid_at"]);
    assert_eq!(
        o.audit().await,
        ["invoice.issued", "invoice.paid", "subscription.active"]
    );
    o.app.settled().await;
    let paid_events = o
        .events(3)
        .await
        .iter()
        .filter(|(e, _)| e == "invoice.paid")
        .count();
    assert_eq!(paid_events, 1);

    // A malformed body, once signed, is a 422; without a secret configured, 503.
    let body = b"{\"txid\": 5}";
    let r = o
        .app
        .send(
            o.app
                .client
                .post(o.app.url("/v1/billing/pix/webhook"))
                .header("content-type", "application/json")
                .header("x-signature", format!("sha256={}", sign(PIX_SECRET, body)))
                .body(body.to_vec()),
        )
        .await;
    r.expect_error(422, "validation_failed");
    let bare = spawn_app_with(|_| {}).await;
    bare.post_json("/v1/billing/pix/webhook", &json!({}))
        .await
        .expect_error(503, "service_unavailable");
}

/// `pay` needs a Pix key: without one, 503 and nothing issued.
#[tokio::test]
async fn paying_without_a_pix_key_is_unavailable() {
    let o = org_with("starter", |c| c.billing.pix = None).await;
    o.act("pay").await.expect_error(503, "service_unavailable");
    assert!(o.invoices().await.is_empty());
}

/// Upgrading takes effect now with a prorated invoice for the rest of the paid period;
/// downgrading waits for the period's end; a plan the organization outgrew is refused
/// with each limit it would pass.
#[tokio::test]
async fn plan_changes_upgrade_now_and_downgrade_at_the_period_end() {
    let o = org_on("growth").await;
    // Pay the first period and let the trial end.
    let inv = o.act("pay").await.body.clone();
    o.pix_paid(inv["txid"].as_str().unwrap(), 14_900, PIX_SECRET)
        .await
        .expect(200);
    let trial_end = at(&o.subscription().await["trial_ends_at"]);
    o.day(trial_end).await;
    let s = o.subscription().await;
    let (start, end) = (at(&s["current_period_start"]), at(&s["current_period_end"]));

    // Ten days in, to scale: the difference for what is left, rounded up to the cent.
    o.advance(Duration::seconds(10 * 86_400)).await;
    o.sign_in_again().await;
    let r = o.change(json!({"plan_code": "scale"})).await;
    r.expect(200);
    assert_eq!(r.body["plan_code"], "scale");
    assert_eq!(r.body["limits"]["stores"], 10);
    assert_eq!(r.body["status"], "active");
    let prorated = &r.body["open_invoice"];
    assert_eq!(prorated["billing_reason"], "subscription_update");
    let (whole, left) = (
        (end - start).num_seconds(),
        (end - o.app.clock_now()).num_seconds(),
    );
    let expected = ((39_900 - 14_900) * left + whole - 1) / whole;
    assert_eq!(prorated["amount_cents"], expected);
    assert_eq!(at(&prorated["period_end"]), end);
    assert_eq!(
        at(&prorated["due_at"]),
        o.app.clock_now() + Duration::days(3)
    );

    // Two more stores, then a plan with room for one: refused, naming the limit.
    for name in ["Two", "Three"] {
        o.add_store(name).await.expect(201);
    }
    let r = o.change(json!({"plan_code": "starter"})).await;
    r.expect_error(422, "usage_exceeds_plan");
    assert_eq!(
        r.body["details"],
        json!({"plan": "starter", "exceeded": [{"limit": "stores", "max": 1, "used": 3}]})
    );
    assert_eq!(o.subscription().await["plan_code"], "scale");
    o.change(json!({"plan_code": "gold"}))
        .await
        .expect_error(422, "validation_failed");

    // Growth fits: a downgrade, at the period's end, and the annual cycle from then on.
    let r = o
        .change(json!({"plan_code": "growth", "billing_cycle": "annual"}))
        .await;
    r.expect(200);
    assert_eq!(r.body["plan_code"], "scale");
    assert_eq!(r.body["pending_plan_code"], "growth");
    assert_eq!(r.body["pending_billing_cycle"], "annual");
    // Pay the proration; the renewal then bills growth, annual.
    o.pix_paid(prorated["txid"].as_str().unwrap(), expected, PIX_SECRET)
        .await
        .expect(200);
    o.day(end - Duration::days(7)).await;
    let renewal = o.subscription().await["open_invoice"].clone();
    assert_eq!(renewal["plan_code"], "growth");
    assert_eq!(renewal["billing_cycle"], "annual");
    assert_eq!(renewal["amount_cents"], 149_000);
    o.pix_paid(renewal["txid"].as_str().unwrap(), 149_000, PIX_SECRET)
        .await
        .expect(200);
    o.day(end).await;
    let s = o.subscription().await;
    assert_eq!(s["plan_code"], "growth");
    assert_eq!(s["billing_cycle"], "annual");
    assert!(s["pending_plan_code"].is_null());
    assert_eq!(s["status"], "active");
    assert_eq!(
        at(&s["current_period_end"]),
        end.checked_add_months(chrono::Months::new(12)).unwrap()
    );
}

/// Cancel at the period's end, resume undoes it; once canceled, resume issues the invoice
/// that reactivates it, and paying it starts a new period.
#[tokio::test]
async fn cancel_and_resume() {
    let o = org_on("starter").await;
    let trial_end = at(&o.subscription().await["trial_ends_at"]);
    // The first invoice is out (a week before the trial ends); canceling voids it.
    o.day(trial_end - Duration::days(7)).await;
    let r = o.act("cancel").await;
    r.expect(200);
    assert_eq!(r.body["cancel_at_period_end"], true);
    assert!(r.body["open_invoice"].is_null());
    assert_eq!(o.invoices().await[0]["status"], "void");
    o.act("pay").await.expect_error(409, "conflict");
    let r = o.act("resume").await;
    r.expect(200);
    assert_eq!(r.body["cancel_at_period_end"], false);
    o.act("resume").await.expect_error(409, "conflict");
    o.act("cancel").await.expect(200);
    // The trial ends: canceled.
    o.day(trial_end).await;
    let s = o.subscription().await;
    assert_eq!(s["status"], "canceled");
    o.act("cancel").await.expect_error(409, "conflict");
    // Resume issues the reactivation; it is active once paid, for a period from then.
    o.advance(Duration::seconds(86_400)).await;
    o.sign_in_again().await;
    let r = o.act("resume").await;
    r.expect(200);
    assert_eq!(r.body["status"], "canceled");
    let inv = r.body["open_invoice"].clone();
    assert_eq!(inv["billing_reason"], "subscription_resume");
    assert_eq!(o.act("pay").await.body["id"], inv["id"]);
    o.pix_paid(inv["txid"].as_str().unwrap(), 4_900, PIX_SECRET)
        .await
        .expect(200);
    let s = o.subscription().await;
    assert_eq!(s["status"], "active");
    assert_eq!(s["current_period_start"], inv["period_start"]);
    assert!(s["canceled_at"].is_null());
    assert_eq!(
        o.audit().await,
        [
            "invoice.issued",
            "invoice.voided",
            "subscription.updated",
            "subscription.updated",
            "subscription.updated",
            "subscription.canceled",
            "invoice.issued",
            "invoice.paid",
            "subscription.active"
        ]
    );
}

/// Who may do what to an organization's billing: reading needs `billing.read` (any store
/// role of the organization); changing and paying needs `billing.write` (owners); an
/// outsider gets 404 and a store API token 403 on every route.
#[tokio::test]
async fn the_authorization_table_for_billing_routes() {
    let o = org_on("growth").await;
    let app = &o.app;
    let mut who = vec![("owner", o.token())];
    for role in ["admin", "staff", "viewer"] {
        let (t, id) = app.member(&format!("{role}@example.com")).await;
        app.add_to_store(&o.store, &id, role).await;
        who.push((role, t));
    }
    let (outsider, _) = app.member("outsider@example.com").await;
    let store_token = app
        .store_token(
            &o.token(),
            &o.store,
            json!(["billing.read", "billing.write"]),
        )
        .await;
    let inv = o.act("pay").await.body.clone();
    let qr = format!(
        "/v1/tenants/{}/invoices/{}/pix.png",
        o.tenant,
        inv["id"].as_str().unwrap()
    );
    let reads = [
        (reqwest::Method::GET, o.path("/subscription"), None),
        (reqwest::Method::GET, o.path("/invoices"), None),
        (reqwest::Method::GET, qr, None),
    ];
    let writes = [
        (
            put(),
            o.path("/subscription"),
            Some(json!({"plan_code": "growth"})),
        ),
        (post(), o.path("/subscription/pay"), None),
        (post(), o.path("/subscription/cancel"), None),
        (post(), o.path("/subscription/resume"), None),
    ];
    for (method, path, body) in reads.iter().chain(writes.iter()) {
        let is_read = *method == reqwest::Method::GET;
        for (role, token) in &who {
            let r = app.call(method.clone(), path, token, body.clone()).await;
            if is_read || *role == "owner" {
                r.expect(200);
            } else {
                r.expect_error(403, "missing_permission");
            }
        }
        app.call(method.clone(), path, &outsider, body.clone())
            .await
            .expect_error(404, "not_found");
        app.call(method.clone(), path, &store_token, body.clone())
            .await
            .expect_error(403, "missing_permission");
    }
}

/// `setup --demo`: the organization pays for a plan, two invoices paid and the renewal open
/// with its Pix code.
#[tokio::test]
async fn the_demo_organization_is_on_a_paid_plan_with_its_renewal_open() {
    let o = org_on("growth").await;
    let (db, now) = (o.app.state.db.clone(), o.app.clock_now());
    let input = merchant_admin::setup::SetupInput {
        email: "demo@example.com".into(),
        password: crate::support::PASSWORD.into(),
        org_name: "Demo".into(),
        store_name: "Demo store".into(),
        demo: true,
    };
    let out = tokio::task::spawn_blocking(move || merchant_admin::setup::run(&db, now, &input))
        .await
        .unwrap()
        .expect("setup");
    let login = o.app.login_as("demo@example.com", "laptop").await;
    let token = login.body["token"].as_str().unwrap();
    let s = o
        .app
        .get_as(
            &format!("/v1/tenants/{}/subscription", out.tenant_id),
            token,
        )
        .await;
    s.expect(200);
    assert_eq!(s.body["status"], "active");
    assert_eq!(s.body["plan_code"], "growth");
    let open = &s.body["open_invoice"];
    assert_eq!(open["billing_reason"], "subscription_cycle");
    assert!(
        open["pix"]["copy_paste"]
            .as_str()
            .unwrap()
            .starts_with("000201")
    );
    let list = o
        .app
        .get_as(&format!("/v1/tenants/{}/invoices", out.tenant_id), token)
        .await;
    let statuses: Vec<&str> = list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["open", "paid", "paid"], "newest first");
}

/// A period paid in advance is what was paid for: a later change of cycle waits for the
/// period after it, and an upgrade bills the paid-ahead period's difference in full (a
/// trial's own days are free, so nothing is prorated for them).
#[tokio::test]
async fn a_period_paid_in_advance_keeps_the_terms_it_was_paid_at() {
    let o = org_on("starter").await;
    let trial_end = at(&o.subscription().await["trial_ends_at"]);
    let first = o.act("pay").await.body.clone();
    o.pix_paid(first["txid"].as_str().unwrap(), 4_900, PIX_SECRET)
        .await
        .expect(200);
    // Annual from the next period on: the paid month stays a month.
    let r = o.change(json!({"billing_cycle": "annual"})).await;
    r.expect(200);
    assert_eq!(r.body["pending_billing_cycle"], "annual");
    assert!(
        r.body["open_invoice"].is_null(),
        "nothing to re-issue: it is paid"
    );
    // Scale now: the paid month's difference, in full, due in 3 days.
    let r = o.change(json!({"plan_code": "scale"})).await;
    r.expect(200);
    let diff = &r.body["open_invoice"];
    assert_eq!(diff["billing_reason"], "subscription_update");
    assert_eq!(diff["amount_cents"], 39_900 - 4_900);
    assert_eq!(at(&diff["period_start"]), trial_end);
    assert_eq!(
        o.invoices().await.len(),
        2,
        "no proration of the free trial"
    );
    o.pix_paid(diff["txid"].as_str().unwrap(), 35_000, PIX_SECRET)
        .await
        .expect(200);
    o.day(trial_end).await;
    let s = o.subscription().await;
    assert_eq!(s["status"], "active");
    assert_eq!(s["plan_code"], "scale");
    assert_eq!(s["billing_cycle"], "monthly");
    assert_eq!(s["pending_billing_cycle"], "annual");
    let end = at(&s["current_period_end"]);
    assert_eq!(
        end,
        trial_end
            .checked_add_months(chrono::Months::new(1))
            .unwrap()
    );
    // The renewal is the first annual one, at scale's price.
    o.day(end - Duration::days(7)).await;
    let renewal = o.subscription().await["open_invoice"].clone();
    assert_eq!(renewal["billing_cycle"], "annual");
    assert_eq!(renewal["amount_cents"], 399_000);
    assert_eq!(
        at(&renewal["period_end"]),
        end.checked_add_months(chrono::Months::new(12)).unwrap()
    );
}

/// An upgrade while an earlier upgrade's difference is unpaid adds its own difference: the
/// two add up to the dearest plan's price.
#[tokio::test]
async fn upgrades_while_past_due_still_bill_their_difference() {
    let o = org_on("starter").await;
    let trial_end = at(&o.subscription().await["trial_ends_at"]);
    o.day(trial_end).await;
    let first = o.subscription().await["open_invoice"].clone();
    o.pix_paid(first["txid"].as_str().unwrap(), 4_900, PIX_SECRET)
        .await
        .expect(200);
    let s = o.subscription().await;
    let (start, end) = (at(&s["current_period_start"]), at(&s["current_period_end"]));
    let growth = o.change(json!({"plan_code": "growth"})).await.body["open_invoice"].clone();
    o.day(o.app.clock_now() + Duration::days(4)).await;
    assert_eq!(o.subscription().await["status"], "past_due");
    let r = o.change(json!({"plan_code": "scale"})).await;
    r.expect(200);
    let (whole, left) = (
        (end - start).num_seconds(),
        (end - o.app.clock_now()).num_seconds(),
    );
    let owed: Vec<i64> = o
        .invoices()
        .await
        .iter()
        .filter(|i| i["status"] == "open")
        .map(|i| i["amount_cents"].as_i64().unwrap())
        .collect();
    assert_eq!(
        owed,
        [
            ((39_900 - 14_900) * left + whole - 1) / whole,
            growth["amount_cents"].as_i64().unwrap()
        ],
        "newest first"
    );
}

/// A reactivation invoice paid long after it was issued buys a period from the payment.
/// Paid ahead, a cancellation takes effect at the end of what was paid for.
#[tokio::test]
async fn a_late_reactivation_starts_when_paid_and_a_paid_period_is_served() {
    let o = org_on("starter").await;
    let trial_end = at(&o.subscription().await["trial_ends_at"]);
    o.act("cancel").await.expect(200);
    o.day(trial_end).await;
    assert_eq!(o.subscription().await["status"], "canceled");
    let inv = o.act("resume").await.body["open_invoice"].clone();
    o.day(trial_end + Duration::days(90)).await;
    o.pix_paid(inv["txid"].as_str().unwrap(), 4_900, PIX_SECRET)
        .await
        .expect(200);
    let s = o.subscription().await;
    assert_eq!(s["status"], "active");
    let start = at(&s["current_period_start"]);
    assert_eq!(start, o.app.clock_now());
    let end = at(&s["current_period_end"]);
    // Pay the next period ahead, then cancel: the paid period is still served.
    let next = o.act("pay").await.body.clone();
    assert_eq!(at(&next["period_start"]), end);
    o.pix_paid(next["txid"].as_str().unwrap(), 4_900, PIX_SECRET)
        .await
        .expect(200);
    o.act("cancel").await.expect(200);
    o.day(end).await;
    let s = o.subscription().await;
    assert_eq!(s["status"], "active");
    assert_eq!(at(&s["current_period_start"]), end);
    assert_eq!(s["cancel_at_period_end"], true);
    let last = at(&s["current_period_end"]);
    o.day(last).await;
    assert_eq!(o.subscription().await["status"], "canceled");
}

/// Paying while suspended brings the subscription back, and stores can be added again.
/// A payment for an invoice voided since is refused (409) and changes nothing.
#[tokio::test]
async fn paying_while_suspended_reactivates_and_a_voided_invoice_is_refused() {
    let o = org_on("growth").await;
    let trial_end = at(&o.subscription().await["trial_ends_at"]);
    o.day(trial_end).await;
    o.day(trial_end + Duration::days(8)).await;
    let s = o.subscription().await;
    assert_eq!(s["status"], "suspended");
    let inv = s["open_invoice"].clone();
    // The price changes while it is open: the old code is voided, a new one issued.
    let r = o.change(json!({"plan_code": "scale"})).await;
    r.expect(200);
    let repriced = r.body["open_invoice"].clone();
    assert_ne!(repriced["id"], inv["id"]);
    assert_eq!(repriced["amount_cents"], 39_900);
    assert_eq!(repriced["period_start"], inv["period_start"]);
    o.pix_paid(inv["txid"].as_str().unwrap(), 14_900, PIX_SECRET)
        .await
        .expect_error(409, "conflict");
    assert_eq!(o.subscription().await["status"], "suspended");
    o.pix_paid(repriced["txid"].as_str().unwrap(), 39_900, PIX_SECRET)
        .await
        .expect(200);
    let s = o.subscription().await;
    assert_eq!(s["status"], "active");
    assert_eq!(s["plan_code"], "scale");
    o.add_store("Two").await.expect(201);
}
