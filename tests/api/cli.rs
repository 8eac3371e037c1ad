//! The binary's subcommands, run as a user would run them.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use rusqlite::Connection;
use serde_json::{Value, json};

use crate::support::{spawn_app, wait_until};

const BIN: &str = env!("CARGO_BIN_EXE_merchant-admin");

fn run(args: &[&str], data_dir: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .stdin(Stdio::null())
        .env_remove("MERCHANT_ADMIN_LOG")
        .output()
        .expect("run merchant-admin")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn count(db: &Path, table: &str) -> i64 {
    let c = Connection::open(db).unwrap();
    c.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

fn setup_args(email: &str, demo: bool) -> Vec<&str> {
    let mut a = vec![
        "setup",
        "--email",
        email,
        "--password",
        "s3cret-enough",
        "--org-name",
        "Loja da Ana",
        "--store-name",
        "Loja Centro",
    ];
    if demo {
        a.push("--demo");
    }
    a
}

#[test]
fn setup_prints_one_json_object_and_refuses_a_second_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&setup_args("Ana@Example.com ", false), dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.trim().lines().count(), 1, "exactly one line: {text}");
    let v: Value = serde_json::from_str(text.trim()).unwrap();
    let obj = v.as_object().unwrap();
    assert_eq!(obj.len(), 3, "{v}");
    for k in ["user_id", "tenant_id", "store_id"] {
        uuid::Uuid::parse_str(v[k].as_str().unwrap()).unwrap();
    }

    let db = dir.path().join("merchant-admin.db");
    let c = Connection::open(&db).unwrap();
    let (email, hash): (String, String) = c
        .query_row("SELECT email, password_hash FROM users", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(email, "ana@example.com");
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    let role: String = c
        .query_row(
            "SELECT role FROM store_members WHERE user_id = ?1",
            [v["user_id"].as_str().unwrap()],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(role, "owner");
    let slug: String = c
        .query_row("SELECT slug FROM tenants", [], |r| r.get(0))
        .unwrap();
    assert_eq!(slug, "loja-da-ana");
    drop(c);

    let before: Vec<i64> = ["users", "tenants", "stores", "store_members"]
        .iter()
        .map(|t| count(&db, t))
        .collect();
    let again = run(&setup_args("ana@example.com", false), dir.path());
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );
    assert!(stdout(&again).is_empty());
    let after: Vec<i64> = ["users", "tenants", "stores", "store_members"]
        .iter()
        .map(|t| count(&db, t))
        .collect();
    assert_eq!(before, after, "a failed setup changes nothing");
}

#[test]
fn setup_validates_input_and_needs_values_without_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[
            "setup",
            "--email",
            "a@example.com",
            "--password",
            "short",
            "--org-name",
            "O",
            "--store-name",
            "S",
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("password"), "{}", stderr(&out));

    let out = run(
        &[
            "setup",
            "--password",
            "long enough",
            "--org-name",
            "O",
            "--store-name",
            "S",
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--email"), "{}", stderr(&out));
}

#[test]
fn setup_demo_seeds_a_team_and_flags_read_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(setup_args("owner@example.com", true))
        .env("MERCHANT_ADMIN_DATA_DIR", dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let db = dir.path().join("merchant-admin.db");
    assert!(count(&db, "users") > 1, "demo adds people");
    assert!(count(&db, "store_members") > 1);
    // A store to click through: catalog, customers, orders in every status, reviews.
    assert_eq!(count(&db, "products"), 50);
    assert!(count(&db, "variants") > 100);
    assert_eq!(count(&db, "customers"), 200);
    assert_eq!(count(&db, "orders"), 500);
    assert_eq!(count(&db, "reviews"), 300);
    assert!(count(&db, "refunds") > 5);
    let c = Connection::open(&db).unwrap();
    let distinct = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(distinct("SELECT COUNT(DISTINCT status) FROM orders"), 8);
    assert_eq!(distinct("SELECT COUNT(DISTINCT status) FROM reviews"), 3);
    // Analytics: the counters hold every paid order, succeeded refund and customer.
    let text = |sql: &str| -> String { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(
        text("SELECT SUM(orders) || '/' || SUM(revenue_cents) || '/' || SUM(refunds_cents) || '/' || SUM(new_customers) FROM analytics_buckets"),
        text(
            "SELECT (SELECT COUNT(*) FROM orders o WHERE EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id))
             || '/' || (SELECT SUM(total_cents) FROM orders o WHERE EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id))
             || '/' || (SELECT SUM(amount_cents) FROM refunds WHERE status = 'succeeded')
             || '/' || (SELECT COUNT(*) FROM customers)"
        )
    );
    // Purchasing: 3 suppliers, purchase orders in all five statuses; the received units came
    // in as purchase_order stock adjustments (2 lines x 20 received, 2 x 8 partly).
    assert_eq!(count(&db, "suppliers"), 3);
    assert_eq!(
        distinct("SELECT COUNT(DISTINCT status) FROM purchase_orders"),
        5
    );
    assert_eq!(
        distinct("SELECT SUM(delta) FROM stock_adjustments WHERE reason = 'purchase_order'"),
        56
    );
    // Marketing: 2 segments; a draft, a scheduled and a sent campaign, whose recipients
    // (customers who accept marketing, have an e-mail and carry "vip") are all sent.
    assert_eq!(count(&db, "segments"), 2);
    let statuses: String = c
        .query_row(
            "SELECT group_concat(status, ',') FROM (SELECT status FROM campaigns ORDER BY status)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(statuses, "draft,scheduled,sent");
    assert_eq!(
        distinct(
            "SELECT COUNT(*) FROM campaigns WHERE status = 'sent' AND recipients > 0
               AND sent = recipients AND failed = 0"
        ),
        1
    );
    assert_eq!(
        distinct("SELECT COUNT(*) FROM campaign_recipients WHERE status <> 'sent'"),
        0
    );
    // Storefront pages: 5, 3 published, one with earlier versions; a feed token.
    assert_eq!(count(&db, "pages"), 5);
    assert_eq!(
        distinct("SELECT COUNT(*) FROM pages WHERE status = 'published'"),
        3
    );
    assert_eq!(count(&db, "page_versions"), 2);
    assert_eq!(
        distinct("SELECT COUNT(*) FROM ads_settings WHERE feed_token_hash IS NOT NULL"),
        1
    );
    // An inbox: one channel of each kind, 40 conversations in every status and priority, on
    // every channel, with messages, notes and a few files; snoozed ones wake on their own.
    assert_eq!(distinct("SELECT COUNT(DISTINCT kind) FROM channels"), 3);
    assert_eq!(count(&db, "conversations"), 40);
    assert_eq!(
        distinct("SELECT COUNT(DISTINCT status) FROM conversations"),
        4
    );
    assert_eq!(
        distinct("SELECT COUNT(DISTINCT priority) FROM conversations"),
        5
    );
    assert_eq!(
        distinct("SELECT COUNT(DISTINCT channel_kind) FROM conversations"),
        3
    );
    assert_eq!(
        distinct(
            "SELECT COUNT(*) FROM conversations c WHERE NOT EXISTS
                  (SELECT 1 FROM messages m WHERE m.conversation_id = c.id)"
        ),
        0
    );
    assert!(count(&db, "messages") > 80);
    assert!(count(&db, "conversation_notes") > 0);
    assert!(count(&db, "message_attachments") > 0);
    assert_eq!(
        distinct("SELECT COUNT(*) FROM jobs WHERE kind = 'conversation_wake'"),
        distinct("SELECT COUNT(*) FROM conversations WHERE status = 'snoozed'")
    );
    assert!(distinct("SELECT COUNT(*) FROM variants WHERE reserved > 0") > 0);
    // The owner's two assistant conversations: an applied, undoable price change, and a
    // proposal awaiting a decision.
    assert_eq!(count(&db, "assistant_conversations"), 2);
    assert_eq!(
        distinct(
            "SELECT COUNT(*) FROM assistant_actions WHERE undo IS NOT NULL AND undone_at IS NULL"
        ),
        1
    );
    assert_eq!(
        distinct("SELECT COUNT(*) FROM assistant_proposals WHERE status = 'pending'"),
        1
    );
    assert!(distinct("SELECT COUNT(*) FROM reviews WHERE is_verified_purchase") > 0);
    // Two workflows (a review request after delivery, a weekly low-stock summary), each
    // published twice, live at version 2, the schedule with its next fire time.
    assert_eq!(count(&db, "workflows"), 2);
    assert_eq!(count(&db, "workflow_versions"), 4);
    assert_eq!(
        distinct("SELECT COUNT(*) FROM workflows WHERE status = 'published' AND version = 2"),
        2
    );
    assert_eq!(
        distinct(
            "SELECT COUNT(*) FROM workflows WHERE next_fire_at IS NOT NULL
             AND json_extract(published_trigger, '$.cron') = '0 9 * * 1'"
        ),
        1
    );
    assert_eq!(
        distinct(
            "SELECT COUNT(*) FROM workflows WHERE json_extract(published_trigger, '$.event')
             = 'orders.delivered' AND published_graph LIKE '%send_message%'"
        ),
        1
    );
    // A brand system with three versions: the default and two saves, each its own colors.
    assert_eq!(count(&db, "brand_versions"), 3);
    assert_eq!(
        distinct(
            "SELECT COUNT(DISTINCT json_extract(system, '$.colors.aliases.action_primary'))
             FROM brand_versions"
        ),
        3
    );
    // What the API shows agrees with the rows: every paid order has its payment.
    assert_eq!(
        distinct(
            "SELECT COUNT(*) FROM orders o WHERE o.status NOT IN ('pending', 'cancelled')
             AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.order_id = o.id)"
        ),
        0
    );
    assert_eq!(
        distinct(
            "SELECT COUNT(*) FROM orders WHERE status = 'refunded' AND refunded_cents <> total_cents"
        ),
        0
    );
    drop(c);

    // The onboarding checklist, read over HTTP from the served demo, is half done: what the
    // demo has data for; the settings, the domain and a brand save (its three versions are
    // seed data) left for the developer to try.
    let store_id: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let store_id = store_id["store_id"].as_str().unwrap().to_owned();
    let mut server = crate::support::process::start(dir.path(), &[], &[]);
    let base = format!("http://{}", server.addr);
    let (list, brand) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let client = reqwest::Client::builder().no_proxy().build().unwrap();
            let login: Value = client
                .post(format!("{base}/v1/auth/login"))
                .json(
                    &json!({"email": "owner@example.com", "password": "s3cret-enough",
                              "device_name": "cli test"}),
                )
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let token = login["token"].as_str().expect("a session token").to_owned();
            let read = |rest: &'static str| {
                let (client, token, base) = (client.clone(), token.clone(), base.clone());
                let store_id = store_id.clone();
                async move {
                    let r = client
                        .get(format!("{base}/v1/stores/{store_id}/{rest}"))
                        .bearer_auth(token)
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 200);
                    r.json::<Value>().await.unwrap()
                }
            };
            (read("onboarding").await, read("brand-system").await)
        });
    assert!(server.sigterm().success());
    let state: Vec<(&str, bool)> = list["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["key"].as_str().unwrap(), s["done"] == true))
        .collect();
    assert_eq!(
        state,
        [
            ("products", true),
            ("payments", false),
            ("freight", false),
            ("brand", false),
            ("messaging_app", true),
            ("team", true),
            ("custom_domain", false),
            ("first_order", true)
        ],
        "{list}"
    );
    assert_eq!((&list["completed"], &list["total"]), (&json!(4), &json!(8)));
    assert_eq!(brand["version"], 3, "{brand}");
    let versions: Vec<i64> = brand["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_i64().unwrap())
        .collect();
    assert_eq!(versions, [3, 2, 1]);
}

#[test]
fn version_and_migrate() {
    let dir = tempfile::tempdir().unwrap();
    let v = Command::new(BIN).arg("version").output().unwrap();
    assert!(v.status.success());
    assert!(stdout(&v).starts_with("merchant-admin "), "{}", stdout(&v));

    let out = run(&["migrate"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("schema version"));
    let again = run(&["migrate"], dir.path());
    assert!(again.status.success(), "migrate is repeatable");
}

#[test]
fn a_database_from_a_newer_release_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    assert!(run(&["migrate"], dir.path()).status.success());
    let db = dir.path().join("merchant-admin.db");
    let c = Connection::open(&db).unwrap();
    c.execute(
        "INSERT INTO refinery_schema_history (version, name, applied_on, checksum) VALUES (999, 'future', '2030-01-01', '0')",
        [],
    )
    .unwrap();
    drop(c);
    for args in [&["migrate"][..], &["serve", "--addr", "127.0.0.1:0"][..]] {
        let out = run(args, dir.path());
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr(&out).contains("newer release"), "{}", stderr(&out));
    }
    // Our migrations plus the future one, nothing more applied. (Counted from the files:
    // versions need not be contiguous while branches add theirs.)
    let ours = std::fs::read_dir("migrations")
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension() == Some("sql".as_ref()))
        .count();
    assert_eq!(
        count(&db, "refinery_schema_history"),
        i64::try_from(ours).unwrap() + 1
    );
}

#[tokio::test]
async fn backup_while_serving_and_writing_passes_integrity_check() {
    // The writes run back to back for as long as the backup takes (which, at its lowered
    // priority on a busy machine, can be many seconds): no rate limit may cut them short.
    let app = crate::support::spawn_app_with(|c| c.rate_limit_anonymous = 1_000_000).await;
    app.seed_owner("owner@example.com", "Backed Up").await;

    // A stream of writes over HTTP (each stores an idempotency record) that runs before,
    // during and after the backup.
    let done = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (client, url) = (app.client.clone(), app.url("/v1/test/echo"));
        let (done, stop) = (done.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0u32;
            while !stop.load(Ordering::SeqCst) {
                let r = client
                    .post(&url)
                    .header("idempotency-key", format!("w{n}"))
                    .json(&json!({"name": "w", "count": n}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 201);
                n += 1;
                done.store(n, Ordering::SeqCst);
            }
        })
    };
    wait_until("50 writes before the backup", || async {
        done.load(Ordering::SeqCst) >= 50
    })
    .await;
    let before = done.load(Ordering::SeqCst);
    let dest = app.data_dir.path().join("copy.db");
    let (dir, d2) = (app.data_dir.path().to_path_buf(), dest.clone());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .arg("backup")
            .arg(&d2)
            .arg("--data-dir")
            .arg(&dir)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let after = done.load(Ordering::SeqCst);
    wait_until("50 writes after the backup", || async {
        done.load(Ordering::SeqCst) >= after + 50
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    writer.await.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Not a terminal: one JSON summary line, no progress bar.
    let said = stdout(&out);
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    let summary: serde_json::Value = serde_json::from_str(said.trim()).unwrap();
    assert_eq!(summary["path"], dest.to_str().unwrap());
    assert_eq!(
        summary["bytes"],
        std::fs::metadata(&dest).unwrap().len(),
        "{said}"
    );
    assert!(summary["pages"].as_u64().unwrap() > 0, "{said}");
    assert!(summary["seconds"].as_f64().unwrap() >= 0.0, "{said}");
    assert_eq!(
        summary["verified"], false,
        "quick_check only, without --verify"
    );
    assert_eq!(summary["attachments"], 0);
    assert!(
        !stderr(&out).contains('\r'),
        "no progress bar when stderr is not a terminal"
    );
    assert!(
        !dest.with_extension("db-wal").exists(),
        "the copy stands alone, out of WAL mode"
    );
    assert!(
        after > before,
        "writes went on while the backup ran ({before} -> {after})"
    );

    let c = Connection::open(&dest).unwrap();
    let check: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let users: i64 = c
        .query_row("SELECT COUNT(*) FROM users", [], |r| r.get(0))
        .unwrap();
    assert_eq!(users, 1);
    let keys: i64 = c
        .query_row(
            "SELECT COUNT(*) FROM idempotency_keys WHERE status IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    // A snapshot: every write that finished before the backup started, none from after.
    assert!(
        keys >= i64::from(before) && keys <= i64::from(after),
        "{before} <= {keys} <= {after}"
    );

    // An existing file or an unwritable place is a clear failure.
    let again = run(&["backup", dest.to_str().unwrap()], app.data_dir.path());
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("already exists"),
        "{}",
        stderr(&again)
    );
    let nowhere = run(
        &["backup", "/nonexistent-dir/x/copy.db"],
        app.data_dir.path(),
    );
    assert!(!nowhere.status.success());
    assert!(
        stderr(&nowhere).contains("writing the copy"),
        "{}",
        stderr(&nowhere)
    );
    assert!(!Path::new("/nonexistent-dir/x/copy.db").exists());
}

#[tokio::test]
async fn restore_is_refused_while_serving_and_keeps_the_replaced_database() {
    let app = spawn_app().await;
    app.seed_owner("first@example.com", "First").await;
    let backup = app.data_dir.path().join("b.db");
    let out = run(&["backup", backup.to_str().unwrap()], app.data_dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    // The webhook-secret key is not in the copy, and the operator is told so.
    assert!(stderr(&out).contains("secrets.key"), "{}", stderr(&out));
    app.seed_owner("second@example.com", "Second").await;

    let refused = run(&["restore", backup.to_str().unwrap()], app.data_dir.path());
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("server is using"),
        "{}",
        stderr(&refused)
    );

    // Stop the server, keeping its data directory.
    let (stopped, dir) = app.stop().await;
    stopped.unwrap();
    let app_dir = dir.path().to_path_buf();

    let newer = app_dir.join("newer.db");
    std::fs::copy(&backup, &newer).unwrap();
    Connection::open(&newer)
        .unwrap()
        .execute(
            "INSERT INTO refinery_schema_history (version, name, applied_on, checksum)
             VALUES (999, 'future', '2030-01-01', '0')",
            [],
        )
        .unwrap();
    let refused = run(&["restore", newer.to_str().unwrap()], &app_dir);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("newer release"),
        "{}",
        stderr(&refused)
    );

    let garbage = app_dir.join("garbage.db");
    std::fs::write(&garbage, b"this is not sqlite").unwrap();
    let bad = run(&["restore", garbage.to_str().unwrap()], &app_dir);
    assert!(!bad.status.success(), "an unreadable file is refused");

    let ok = run(&["restore", backup.to_str().unwrap()], &app_dir);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(stdout(&ok).contains("kept at"), "{}", stdout(&ok));
    let db = app_dir.join("merchant-admin.db");
    let c = Connection::open(&db).unwrap();
    let emails: Vec<String> = c
        .prepare("SELECT email FROM users")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(emails, vec!["first@example.com".to_string()]);
    let kept: Vec<_> = std::fs::read_dir(&app_dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains("replaced-"))
        .collect();
    assert_eq!(kept.len(), 1, "the replaced database stays beside it");
    let old = Connection::open(kept[0].path()).unwrap();
    let n: i64 = old
        .query_row("SELECT COUNT(*) FROM users", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2);
}

#[tokio::test]
async fn a_second_server_on_the_same_data_directory_is_refused() {
    let app = spawn_app().await;
    let out = run(&["serve", "--addr", "127.0.0.1:0"], app.data_dir.path());
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("another merchant-admin server"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn help_explains_every_flag_and_its_environment_variable() {
    let out = Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = stdout(&out);
    for flag in [
        "--addr",
        "--data-dir",
        "--log-format",
        "--rate-limit-authenticated",
        "--rate-limit-anonymous",
        "--trust-proxy",
        "--workers",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
        let env = format!(
            "MERCHANT_ADMIN_{}",
            flag.trim_start_matches("--")
                .replace('-', "_")
                .to_uppercase()
        );
        assert!(help.contains(&env), "{env} missing from:\n{help}");
    }
    let out = Command::new(BIN)
        .args(["setup", "--help"])
        .output()
        .unwrap();
    let help = stdout(&out);
    for flag in [
        "--email",
        "--password",
        "--org-name",
        "--store-name",
        "--demo",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn data_dir_is_created_0700_and_database_wal_shm_backups_and_replaced_copies_are_0600() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let out = run(&setup_args("ana@example.com", false), &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mode(&dir), 0o700, "data directory");
    let db = dir.join("merchant-admin.db");
    assert_eq!(mode(&db), 0o600, "database after setup");

    // A database left readable by an older release is tightened on the next start.
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut server = crate::support::process::start(&dir, &[], &[]);
    for f in [
        "merchant-admin.db",
        "merchant-admin.db-wal",
        "merchant-admin.db-shm",
        "secrets.key",
        "hmac.key",
    ] {
        assert_eq!(mode(&dir.join(f)), 0o600, "{f} while serving");
    }
    let backup = tmp.path().join("backup.db");
    let out = run(&["backup", backup.to_str().unwrap()], &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(mode(&backup), 0o600, "backup");
    assert!(server.sigterm().success());

    let out = run(&["restore", backup.to_str().unwrap()], &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let kept: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains("replaced-"))
        .collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(mode(&kept[0].path()), 0o600, "replaced copy");
    assert_eq!(mode(&db), 0o600, "restored database");
    assert_eq!(mode(&dir), 0o700, "data directory at the end");
}

#[tokio::test]
async fn a_restored_backup_serves_every_message_attachment() {
    let app = spawn_app().await;
    let (owner, _) = app.member("owner@example.com").await;
    let store = app.open_store(&owner, "Org").await;
    let p = format!("/v1/stores/{store}");
    let key = app.chat_channel(&owner, &p, json!([])).await;
    let v = app.visitor(&key, json!({})).await;
    app.visitor_says(&v, "A photo please").await.expect(201);
    let messages = format!("{p}/conversations/{}/messages", v.conversation_id);
    let photo: Vec<u8> = (0..200_000u32).map(|i| (i * 7).to_le_bytes()[0]).collect();
    let manual = b"%PDF-1.4 manual".to_vec();
    let sent = app
        .send_files(
            &owner,
            &messages,
            Some("Photo and manual"),
            &[
                ("photo.jpg", "image/jpeg", photo.clone()),
                ("manual.pdf", "application/pdf", manual.clone()),
            ],
        )
        .await;
    sent.expect(201);
    let paths: Vec<String> = sent.body["message"]["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["path"].as_str().unwrap().to_owned())
        .collect();
    let backup = app.data_dir.path().join("with-files.db");
    let out = run(
        &["backup", backup.to_str().unwrap(), "--verify"],
        app.data_dir.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(summary["attachments"], 2, "the files travel in the copy");
    assert_eq!(summary["verified"], true, "--verify ran integrity_check");
    let (stopped, old) = app.stop().await;
    stopped.unwrap();

    // A new machine: the backup and the key files the operator keeps beside it.
    let fresh = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(old.path())
        .unwrap()
        .filter_map(Result::ok)
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".key") {
            std::fs::copy(e.path(), fresh.path().join(&name)).unwrap();
        }
    }
    let restored = run(&["restore", backup.to_str().unwrap()], fresh.path());
    assert!(restored.status.success(), "{}", stderr(&restored));
    let app = crate::support::spawn_app_at(fresh, crate::support::start_time(), |_| {}).await;
    for (path, want) in paths.iter().zip([photo, manual]) {
        let res = app
            .client
            .get(app.url(path))
            .bearer_auth(&owner)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{path}");
        assert_eq!(res.bytes().await.unwrap().as_ref(), want.as_slice());
    }
}

/// A plans file the server cannot use stops it at start, naming the file's line.
#[test]
fn a_bad_plans_file_stops_the_server_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let plans = dir.path().join("plans.toml");
    std::fs::write(
        &plans,
        "[[plans]]\ncode = \"basic\"\nname = \"Basic\"\nmonthly_price_cents = -1\n\
         annual_price_cents = 0\nlimits = { stores = 1, members_per_store = 1, products = 1, \
         orders_per_month = 1, assistant_messages_per_store_per_month = 1 }\n",
    )
    .unwrap();
    let out = run(
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--plans-file",
            plans.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("plans.toml") && err.contains("line 2") && err.contains("at least 1"),
        "{err}"
    );
}

/// `setup --demo` leaves the organization paying (two invoices paid, the renewal open), and
/// `billing mark-paid` settles the open one once: again is a no-op, an unknown number fails.
#[test]
fn billing_mark_paid_settles_the_demo_renewal_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(setup_args("owner@example.com", true))
        .env("MERCHANT_ADMIN_DATA_DIR", dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let db = dir.path().join("merchant-admin.db");
    let c = Connection::open(&db).unwrap();
    let one = |sql: &str| -> String { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(
        one("SELECT status || ' ' || plan_code FROM subscriptions"),
        "active growth"
    );
    assert_eq!(
        one(
            "SELECT group_concat(number || ':' || status, ' ') FROM (SELECT * FROM invoices ORDER BY seq)"
        ),
        "INV-000001:paid INV-000002:paid INV-000003:open"
    );

    let out = run(&["billing", "mark-paid", "inv-000003"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("INV-000003: paid"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        one("SELECT status || ' ' || paid_via FROM invoices WHERE number = 'INV-000003'"),
        "paid manual"
    );
    assert_eq!(
        one("SELECT action || ' ' || via FROM audit_log WHERE resource_type = 'invoice'"),
        "invoice.paid billing_mark_paid"
    );
    assert_eq!(
        one(
            "SELECT group_concat(name, ' ') FROM events WHERE store_id IS NULL AND name <> 'user.created'"
        ),
        "invoice.paid"
    );

    let again = run(&["billing", "mark-paid", "INV-000003"], dir.path());
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(String::from_utf8_lossy(&again.stdout).contains("already paid"));
    assert_eq!(count(&db, "audit_log WHERE resource_type = 'invoice'"), 1);

    let missing = run(&["billing", "mark-paid", "INV-999999"], dir.path());
    assert!(!missing.status.success());
    assert!(stderr(&missing).contains("no invoice numbered INV-999999"));
}

/// A Pix key without the name and city a BR Code needs stops the server at start.
#[test]
fn a_pix_key_needs_its_merchant_name_and_city() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--pix-key",
            "ops@example.com",
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--pix-key needs --pix-merchant-name and --pix-merchant-city"),
        "{}",
        stderr(&out)
    );
}

/// A signed Pix payment no invoice takes is kept, logged, and listed by
/// `billing unapplied` for the operator to reconcile.
#[tokio::test]
async fn billing_unapplied_lists_the_payments_no_invoice_took() {
    use hmac::{Hmac, Mac};
    let dir = tempfile::tempdir().unwrap();
    let mut server = crate::support::process::start(
        dir.path(),
        &["--pix-webhook-secret", "provider-secret-1"],
        &[],
    );
    let body = json!({"txid": "NOTOURS123", "amount_cents": 4_900,
                      "paid_at": "2026-11-20T10:00:00Z"})
    .to_string();
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"provider-secret-1").unwrap();
    mac.update(body.as_bytes());
    let sig: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let r = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!("http://{}/v1/billing/pix/webhook", server.addr))
        .header("content-type", "application/json")
        .header("x-signature", sig)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert!(server.sigterm().success());
    assert!(
        server
            .log_lines()
            .iter()
            .any(|l| l["level"] == "WARN" && l["fields"]["txid"] == "NOTOURS123"),
        "the operator's log says so"
    );
    let out = run(&["billing", "unapplied"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let line: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(line["txid"], "NOTOURS123");
    assert_eq!(line["reason"], "unknown_txid");
    assert_eq!(line["amount_cents"], 4_900);
    assert_eq!(line["paid_at"], "2026-11-20T10:00:00.000000Z");
}

fn healthcheck(addr: &str) -> Output {
    Command::new(BIN)
        .args(["healthcheck", "--addr", addr, "--timeout-secs", "5"])
        .stdin(Stdio::null())
        .env_remove("MERCHANT_ADMIN_ADDR")
        .env("HTTP_PROXY", "http://127.0.0.1:9") // never used: the probe takes no proxy
        .output()
        .expect("run merchant-admin healthcheck")
}

#[tokio::test]
async fn healthcheck_exits_0_only_while_readyz_answers_200() {
    let app = spawn_app().await;
    let port = app.addr.port();
    // The container sets MERCHANT_ADMIN_ADDR=0.0.0.0:8080: probed on loopback.
    for addr in [app.addr.to_string(), format!("0.0.0.0:{port}")] {
        let out = tokio::task::spawn_blocking(move || healthcheck(&addr))
            .await
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let body: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
        assert_eq!(body["status"], "ready");
    }

    // Not ready (shutting down): a non-zero exit naming the status and the reasons.
    app.state
        .shutting_down
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let addr = app.addr.to_string();
    let out = tokio::task::spawn_blocking(move || healthcheck(&addr))
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("503") && stderr(&out).contains("shutting_down"),
        "{}",
        stderr(&out)
    );

    // Nothing listening: a non-zero exit, not a hang.
    let (stopped, _dir) = app.stop().await;
    stopped.unwrap();
    let out = tokio::task::spawn_blocking(move || healthcheck(&format!("127.0.0.1:{port}")))
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("/readyz"), "{}", stderr(&out));
}

/// `--backup-every` outside 1m..=30d stops `serve` before it opens anything, naming the flag
/// and the range: a zero would back up without pause, a huge value (a typo such as `6000h`)
/// would look scheduled and never run.
#[test]
fn backup_every_out_of_range_stops_serve_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let backups = dir.path().join("backups");
    for every in ["0s", "59s", "31d", "6000h", "100years"] {
        let out = run(
            &[
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--backup-dir",
                backups.to_str().unwrap(),
                "--backup-every",
                every,
            ],
            dir.path(),
        );
        assert_eq!(out.status.code(), Some(2), "{every}: a usage error");
        let err = stderr(&out);
        assert!(
            err.contains("--backup-every") && err.contains("from 1m to 30d"),
            "{every}: {err}"
        );
        assert!(
            !dir.path().join("merchant-admin.db").exists() && !backups.exists(),
            "{every}: refused before anything was created"
        );
    }
}

/// A data directory made by `setup`, with about 12 MB of filler rows so a backup takes
/// several steps of 1,024 pages (the filler is only there to be copied).
fn data_dir_of_several_steps() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&setup_args("owner@example.com", false), dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let c = Connection::open(dir.path().join("merchant-admin.db")).unwrap();
    c.execute_batch(
        "CREATE TABLE test_filler (b BLOB);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
         INSERT INTO test_filler SELECT zeroblob(4000) FROM n;",
    )
    .unwrap();
    dir
}

/// Each `done/total pages (N%)` the progress bar drew, in order.
fn bar_states(screen: &str) -> Vec<(u64, u64, u64)> {
    let mut found = Vec::new();
    for (at, _) in screen.match_indices(" pages (") {
        let before = screen[..at].rsplit([' ', '\r', '\n']).next().unwrap_or("");
        let after = &screen[at + " pages (".len()..];
        let pct = after.split('%').next().unwrap_or("");
        let mut parts = before.split('/');
        if let (Some(d), Some(t), Ok(p)) = (parts.next(), parts.next(), pct.parse())
            && let (Ok(d), Ok(t)) = (d.parse(), t.parse())
        {
            found.push((d, t, p));
        }
    }
    found
}

/// On a terminal (a pseudo-terminal made by util-linux's `script`), `backup` draws a progress
/// bar of pages, percent and rate as the copy goes and leaves its last state on screen; with
/// stderr not a terminal, the same backup prints one JSON line and no bar.
#[test]
fn backup_shows_pages_percent_and_rate_on_a_terminal_and_one_json_line_otherwise() {
    let dir = data_dir_of_several_steps();
    let dest = dir.path().join("on-a-terminal.db");
    let command = format!(
        "'{BIN}' backup '{}' --data-dir '{}'",
        dest.display(),
        dir.path().display()
    );
    let out = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .stdin(Stdio::null())
        .env_remove("MERCHANT_ADMIN_LOG")
        // Each step pauses, so the bar is drawn between steps, not only at the end.
        .env("FAILPOINTS", "backup::step=sleep(150)")
        .output()
        .expect("util-linux's `script` (Debian's bsdutils; .ci/run installs it when missing)");
    let screen = stdout(&out);
    assert!(out.status.success(), "{screen} {}", stderr(&out));
    let states = bar_states(&screen);
    assert!(
        states
            .iter()
            .any(|&(d, t, p)| d > 0 && d < t && p > 0 && p < 100),
        "a state in the middle of the copy: {states:?} in {screen:?}"
    );
    let &(done, total, pct) = states.last().expect("the bar's last state stays on screen");
    assert!(done == total && pct == 100, "{states:?}");
    assert!(total >= 3000, "the filler spans several steps: {total}");
    let last_bar = &screen[screen.rfind(" pages (").unwrap()..];
    let rate = last_bar.lines().next().unwrap();
    assert!(rate.contains("/s"), "the rate: {rate:?}");
    assert!(
        screen.contains(&format!("backup written to {}", dest.display())),
        "{screen}"
    );
    assert!(
        !screen.trim_start().starts_with('{'),
        "no JSON on a terminal: {screen}"
    );

    // The same without a terminal: one JSON line on stdout, nothing drawn on stderr.
    let piped = dir.path().join("piped.db");
    let out = run(&["backup", piped.to_str().unwrap()], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert_eq!(said.lines().count(), 1, "{said}");
    let summary: Value = serde_json::from_str(said.trim()).unwrap();
    assert_eq!(summary["pages"], total, "{said}");
    assert!(
        !stderr(&out).contains(" pages (") && !stderr(&out).contains('\r'),
        "{}",
        stderr(&out)
    );
}

fn wait_for_file(path: &Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "no {}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// A backup stopped mid-copy (SIGTERM from a timer's stop, Ctrl-C) leaves no file at its
/// path that looks finished, only `PATH.partial`; the next run replaces that leftover; a
/// second backup to a path being written is refused; and a path that exists (a file, a
/// symlink, even a dangling one) or a `.partial` of someone else's is never overwritten.
#[test]
fn a_backup_killed_midway_leaves_only_a_partial_that_the_next_run_replaces() {
    let dir = data_dir_of_several_steps();
    let dest = dir.path().join("nightly.db");
    let partial = dir.path().join("nightly.db.partial");
    let mut child = Command::new(BIN)
        .args(["backup", dest.to_str().unwrap(), "--data-dir"])
        .arg(dir.path())
        .env("FAILPOINTS", "backup::step=sleep(2000)")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file(&partial);

    let second = run(&["backup", dest.to_str().unwrap()], dir.path());
    assert!(!second.status.success());
    assert!(
        stderr(&second).contains("another backup is writing"),
        "{}",
        stderr(&second)
    );

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(!child.wait().unwrap().success());
    assert!(
        !dest.exists(),
        "nothing at the path that looks like a backup"
    );
    assert!(partial.exists(), "the leftover is named for what it is");

    let again = run(&["backup", dest.to_str().unwrap()], dir.path());
    assert!(again.status.success(), "{}", stderr(&again));
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("nightly"))
        .collect();
    assert_eq!(
        left,
        ["nightly.db"],
        "the leftover and its journal are gone"
    );
    let check: String = Connection::open(&dest)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");

    // Someone else's `.partial` is not a leftover of ours: refused, kept.
    let theirs = dir.path().join("notes.txt");
    std::fs::write(dir.path().join("notes.txt.partial"), b"my notes").unwrap();
    let out = run(&["backup", theirs.to_str().unwrap()], dir.path());
    assert!(!out.status.success());
    assert!(stderr(&out).contains("in the way"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(dir.path().join("notes.txt.partial")).unwrap(),
        b"my notes"
    );
    assert!(!theirs.exists());

    // A symlink at the path, even one to nowhere, is refused and its target not created.
    let target = dir.path().join("elsewhere.db");
    let link = dir.path().join("link.db");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = run(&["backup", link.to_str().unwrap()], dir.path());
    assert!(!out.status.success());
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert!(!target.exists());
}

/// A disk that fills mid-copy (here a file-size limit: the write fails with EFBIG as it
/// would with ENOSPC) fails the backup clearly and leaves nothing behind.
#[test]
fn a_backup_that_runs_out_of_space_fails_and_leaves_nothing() {
    let dir = data_dir_of_several_steps();
    let dest = dir.path().join("too-big.db");
    // Files this process writes are capped at 1 MB; SIGXFSZ ignored, so the write fails
    // instead of killing the process.
    let out = Command::new("sh")
        .args(["-c", "ulimit -f 2048; trap '' XFSZ; exec \"$0\" \"$@\""])
        .arg(BIN)
        .args(["backup", dest.to_str().unwrap(), "--data-dir"])
        .arg(dir.path())
        .stdin(Stdio::null())
        .env_remove("MERCHANT_ADMIN_LOG")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("writing the copy to"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("too-big"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
