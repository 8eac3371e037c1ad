//! Analytics: summaries and top products against brute-force sums over the same orders
//! (issue 20 "Analytics").

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc};
use chrono_tz::Tz;
use serde_json::{Value, json};

use crate::support::{Shop, TestApp, patch, post, spawn_app_with};

fn delete() -> reqwest::Method {
    reqwest::Method::DELETE
}

fn at(v: &Value) -> DateTime<Utc> {
    merchant_admin::time::parse(v.as_str().expect("a timestamp")).expect("RFC 3339")
}

/// A small deterministic generator, so a failure replays.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// What the test did, by the instant each thing counts at: (orders, revenue, refunds, new
/// customers).
#[derive(Default)]
struct Ledger(Vec<(DateTime<Utc>, [i64; 4])>);

impl Ledger {
    fn add(&mut self, t: DateTime<Utc>, v: [i64; 4]) {
        self.0.push((t, v));
    }

    /// The brute-force series: each local day of `from..=to` in `tz`, grouped by `period`
    /// (the first day of the period inside the range).
    fn series(
        &self,
        tz: Tz,
        from: NaiveDate,
        to: NaiveDate,
        period: impl Fn(NaiveDate) -> NaiveDate,
    ) -> BTreeMap<NaiveDate, [i64; 4]> {
        let mut out = BTreeMap::new();
        let mut d = from;
        while d <= to {
            out.insert(period(d).max(from), [0; 4]);
            d += Duration::days(1);
        }
        for (t, v) in &self.0 {
            let day = t.with_timezone(&tz).date_naive();
            if day < from || day > to {
                continue;
            }
            let sums = out.get_mut(&period(day).max(from)).unwrap();
            for (s, x) in sums.iter_mut().zip(v) {
                *s += x;
            }
        }
        out
    }
}

fn average(revenue: i64, orders: i64) -> i64 {
    if orders == 0 {
        0
    } else {
        (2 * revenue + orders) / (2 * orders)
    }
}

fn check_series(body: &Value, expected: &BTreeMap<NaiveDate, [i64; 4]>) {
    let series = body["series"].as_array().unwrap();
    let got: Vec<(String, [i64; 5])> = series
        .iter()
        .map(|p| {
            let n = |k: &str| p[k].as_i64().unwrap();
            (
                p["start"].as_str().unwrap().to_owned(),
                [
                    n("orders"),
                    n("revenue_cents"),
                    n("refunds_cents"),
                    n("new_customers"),
                    n("average_order_cents"),
                ],
            )
        })
        .collect();
    let want: Vec<(String, [i64; 5])> = expected
        .iter()
        .map(|(d, s)| (d.to_string(), [s[0], s[1], s[2], s[3], average(s[1], s[0])]))
        .collect();
    assert_eq!(got, want);
    let mut all = [0i64; 4];
    for s in expected.values() {
        for (a, x) in all.iter_mut().zip(s) {
            *a += x;
        }
    }
    assert_eq!(
        body["totals"],
        json!({"orders": all[0], "revenue_cents": all[1], "refunds_cents": all[2],
               "new_customers": all[3], "average_order_cents": average(all[1], all[0])})
    );
}

impl Shop {
    async fn pay(&self, o: &Value) -> Value {
        self.set_status(o, "paid").await
    }

    async fn named_customer(&self, name: &str) -> Value {
        let r = self
            .app
            .call(
                post(),
                &self.path("customers"),
                &self.token,
                Some(json!({ "name": name })),
            )
            .await;
        r.expect(201);
        r.body.clone()
    }

    /// An order of `quantity` of variant `v` (0 or 1).
    async fn order_of(&self, v: usize, quantity: i64) -> Value {
        let r = self
            .app
            .call(
                post(),
                &self.path("orders"),
                &self.token,
                Some(json!({"customer_id": self.customer,
                            "items": [{"variant_id": self.variants[v], "quantity": quantity}]})),
            )
            .await;
        r.expect(201);
        r.body.clone()
    }

    async fn summary(&self, query: &str) -> Value {
        self.read(&format!("analytics/summary?{query}")).await
    }

    /// Drains the due jobs, then moves the test clock on.
    async fn later(&self, by: Duration) {
        self.app.drain_jobs().await;
        self.app.clock.advance(by);
    }
}

/// Creates, pays, cancels and refunds orders and adds customers at irregular times over
/// five weeks, recording what each should count; returns the ledger.
async fn a_month_of_trade(shop: &Shop, rng: &mut Lcg, steps: usize) -> Ledger {
    let mut ledger = Ledger::default();
    // The shop's first customer, made when it opened.
    let first = shop.read(&format!("customers/{}", shop.customer)).await;
    ledger.add(at(&first["created_at"]), [0, 0, 0, 1]);
    let mut unpaid: Vec<Value> = Vec::new();
    for i in 0..steps {
        let minutes = 600 + rng.below(1800) as i64; // 10 to 40 hours
        shop.later(Duration::minutes(minutes) + Duration::seconds(rng.below(60) as i64))
            .await;
        // Orders left pending earlier are paid now: they count at their creation.
        for o in unpaid.drain(..) {
            let paid = shop.pay(&o).await;
            ledger.add(
                at(&paid["created_at"]),
                [1, paid["total_cents"].as_i64().unwrap(), 0, 0],
            );
        }
        if i % 4 == 0 {
            let c = shop.named_customer(&format!("Customer {i}")).await;
            ledger.add(at(&c["created_at"]), [0, 0, 0, 1]);
        }
        let o = shop.order_of(i % 2, 1 + rng.below(3) as i64).await;
        let total = o["total_cents"].as_i64().unwrap();
        match rng.below(10) {
            0 => {} // left pending: never counts
            1 => {
                // Cancelled before payment: never counts.
                shop.set_status(&o, "cancelled").await;
            }
            2 => unpaid.push(o),
            r => {
                let paid = shop.pay(&o).await;
                ledger.add(at(&paid["created_at"]), [1, total, 0, 0]);
                if r == 3 {
                    // Cancelled after payment: still a sale (its money is refunded apart).
                    shop.set_status(&paid, "cancelled").await;
                }
                if r >= 7 {
                    shop.later(Duration::minutes(rng.below(600) as i64)).await;
                    let refund = shop.refund(&paid, (total / 3).max(1)).await;
                    refund.expect(201);
                    let b = &refund.body;
                    ledger.add(
                        at(&b["created_at"]),
                        [0, 0, b["amount_cents"].as_i64().unwrap(), 0],
                    );
                }
            }
        }
    }
    ledger
}

/// A shop whose calls use a store API token: sessions expire as the test clock moves on.
async fn open_shop(stock: i64) -> Shop {
    let shop = Shop::open(spawn_app_with(|c| c.workers = 0).await, stock).await;
    let token = shop
        .app
        .store_token(&shop.token, &shop.store, json!(["*"]))
        .await;
    Shop { token, ..shop }
}

fn local_today(app: &TestApp, tz: Tz) -> NaiveDate {
    app.clock_now().with_timezone(&tz).date_naive()
}

#[tokio::test]
async fn summaries_equal_a_brute_force_sum_by_day_week_and_month() {
    let shop = open_shop(100_000).await;
    let tz: Tz = "America/Sao_Paulo".parse().unwrap();
    let start = local_today(&shop.app, tz);
    let ledger = a_month_of_trade(&shop, &mut Lcg(7), 40).await;
    let today = local_today(&shop.app, tz);
    assert!(
        (today - start).num_days() > 31,
        "the trade spans a month boundary"
    );

    let range = format!("from={start}&to={today}");
    let body = shop.summary(&range).await;
    assert_eq!(body["interval"], "day");
    assert_eq!(
        (body["timezone"].as_str(), body["currency"].as_str()),
        (Some("America/Sao_Paulo"), Some("BRL"))
    );
    assert_eq!(
        (body["from"].as_str(), body["to"].as_str()),
        (Some(&*start.to_string()), Some(&*today.to_string()))
    );
    let by_day = ledger.series(tz, start, today, |d| d);
    assert!(by_day.values().any(|s| s[0] > 1) && by_day.values().any(|s| *s == [0; 4]));
    check_series(&body, &by_day);

    let monday = |d: NaiveDate| d - Duration::days(i64::from(d.weekday().num_days_from_monday()));
    let weeks = shop.summary(&format!("{range}&interval=week")).await;
    assert_eq!(weeks["interval"], "week");
    check_series(&weeks, &ledger.series(tz, start, today, monday));

    let first_of_month = |d: NaiveDate| d.with_day(1).unwrap();
    let months = shop.summary(&format!("{range}&interval=month")).await;
    check_series(&months, &ledger.series(tz, start, today, first_of_month));
    assert_eq!(months["series"].as_array().unwrap().len(), 2);

    // A part of the range, starting mid-week.
    let (from, to) = (start + Duration::days(3), start + Duration::days(17));
    let part = shop
        .summary(&format!("from={from}&to={to}&interval=week"))
        .await;
    check_series(&part, &ledger.series(tz, from, to, monday));

    // The default: the last 30 local days, today included.
    let default = shop.summary("").await;
    let since = today - Duration::days(29);
    assert_eq!(default["from"], since.to_string());
    check_series(&default, &ledger.series(tz, since, today, |d| d));

    // A deleted customer no longer counts as new.
    let gone = shop.named_customer("Short-lived").await;
    let r = shop
        .app
        .call(
            delete(),
            &shop.path(&format!("customers/{}", gone["id"].as_str().unwrap())),
            &shop.token,
            None,
        )
        .await;
    r.expect(204);
    check_series(&shop.summary(&range).await, &by_day);
}

#[tokio::test]
async fn days_are_cut_in_each_stores_time_zone_and_stores_never_mix() {
    let shop = open_shop(100).await;
    let app = &shop.app;
    // A second store, in UTC, of another owner.
    let (other, _) = app.member("utc@example.com").await;
    let store_b = app.open_store(&other, "Org UTC").await;
    let b = |rest: &str| format!("/v1/stores/{store_b}/{rest}");
    let tenant = app
        .get_as(&format!("/v1/stores/{store_b}"), &other)
        .await
        .body["tenant_id"]
        .clone();
    app.call(
        patch(),
        &format!("/v1/tenants/{}", tenant.as_str().unwrap()),
        &other,
        Some(json!({"timezone": "UTC"})),
    )
    .await
    .expect(200);
    let other = app.store_token(&other, &store_b, json!(["*"])).await;
    let customer = app
        .call(
            post(),
            &b("customers"),
            &other,
            Some(json!({"name": "Bia"})),
        )
        .await;
    let product = app
        .call(
            post(),
            &b("products"),
            &other,
            Some(json!({"title": "Mug", "variants": [
            {"sku": "MUG", "title": "Default", "price_cents": 4000, "on_hand": 10}]})),
        )
        .await;
    product.expect(201);

    // 2026-11-03T01:00Z: still the 2nd in São Paulo, already the 3rd in UTC.
    shop.later(Duration::hours(13)).await;
    assert_eq!(app.clock_now().to_rfc3339(), "2026-11-03T01:00:00+00:00");
    let a_order = shop.order_of(0, 2).await;
    shop.pay(&a_order).await;
    let b_order = app
        .call(
            post(),
            &b("orders"),
            &other,
            Some(json!({"customer_id": customer.body["id"],
            "items": [{"variant_id": product.body["variants"][0]["id"], "quantity": 1}]})),
        )
        .await;
    b_order.expect(201);
    app.call(
        patch(),
        &b(&format!("orders/{}", b_order.body["id"].as_str().unwrap())),
        &other,
        Some(json!({"status": "paid"})),
    )
    .await
    .expect(200);

    let range = "from=2026-11-02&to=2026-11-03";
    let a = shop.summary(range).await;
    let orders = |s: &Value| -> Vec<i64> {
        s["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["orders"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(orders(&a), [1, 0]);
    assert_eq!(a["totals"]["revenue_cents"], 5000);
    assert_eq!(
        a["totals"]["new_customers"], 1,
        "the other store's customer is not ours"
    );
    let bs = app
        .get_as(&b(&format!("analytics/summary?{range}")), &other)
        .await;
    bs.expect(200);
    assert_eq!(bs.body["timezone"], "UTC");
    assert_eq!(orders(&bs.body), [0, 1]);
    assert_eq!(bs.body["totals"]["revenue_cents"], 4000);

    // Top products keep to their store too.
    let top = shop.read(&format!("analytics/top-products?{range}")).await;
    assert_eq!(top["data"].as_array().unwrap().len(), 1);
    assert_eq!(top["data"][0]["title"], "Tee");

    // Another store's analytics are 404 to a stranger.
    let (stranger, _) = app.member("stranger@example.com").await;
    for path in ["analytics/summary", "analytics/top-products"] {
        app.get_as(&b(path), &stranger)
            .await
            .expect_error(404, "not_found");
    }
}

#[tokio::test]
async fn bad_ranges_and_intervals_are_422() {
    let shop = open_shop(10).await;
    for q in [
        "from=2026-02-30",
        "from=2026-1-5",
        "to=tomorrow",
        "from=2026-11-05&to=2026-11-04",
        "from=2025-01-01&to=2026-01-02",
        "interval=year",
        "interval=",
        "period=day",
    ] {
        for path in ["summary", "top-products"] {
            if path == "top-products" && q.starts_with("interval") {
                continue;
            }
            shop.app
                .get_as(&shop.path(&format!("analytics/{path}?{q}")), &shop.token)
                .await
                .expect_error(422, "validation_failed");
        }
    }
    // 366 days is the most: a leap year.
    let year = shop
        .summary("from=2024-01-01&to=2024-12-31&interval=month")
        .await;
    assert_eq!(year["series"].as_array().unwrap().len(), 12);
    assert_eq!(year["totals"]["orders"], 0);
    let leap = shop.summary("from=2024-01-01&to=2024-12-31").await;
    assert_eq!(leap["series"].as_array().unwrap().len(), 366);
    assert_eq!(leap["series"][59]["start"], "2024-02-29");
}

#[tokio::test]
async fn top_products_rank_by_revenue_page_by_cursor_and_match_the_orders() {
    let shop = open_shop(1000).await;
    let app = &shop.app;
    // Two more products: (title, price).
    let mut variants = vec![
        (shop.variants[0].clone(), "Tee"),
        (shop.variants[1].clone(), "Tee"),
    ];
    for (title, price) in [("Cap", 1000), ("Bag", 9000)] {
        let r = app
            .call(post(), &shop.path("products"), &shop.token, Some(json!({"title": title,
                "variants": [{"sku": title, "title": "Default", "price_cents": price, "on_hand": 1000}]})))
            .await;
        r.expect(201);
        variants.push((
            r.body["variants"][0]["id"].as_str().unwrap().to_owned(),
            title,
        ));
    }
    let mut rng = Lcg(11);
    let mut want: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
    for i in 0..24 {
        shop.later(Duration::minutes(200 + rng.below(900) as i64))
            .await;
        let lines: Vec<usize> = (0..4).filter(|_| rng.below(2) == 0).collect();
        let lines = if lines.is_empty() { vec![i % 4] } else { lines };
        let items: Vec<Value> = lines
            .iter()
            .map(|&v| json!({"variant_id": variants[v].0, "quantity": 1 + rng.below(4)}))
            .collect();
        let r = app
            .call(
                post(),
                &shop.path("orders"),
                &shop.token,
                Some(json!({"customer_id": shop.customer, "items": items})),
            )
            .await;
        r.expect(201);
        if rng.below(4) == 0 {
            continue; // unpaid: its lines do not count
        }
        let paid = shop.pay(&r.body).await;
        for line in paid["items"].as_array().unwrap() {
            let e = want
                .entry(match line["title"].as_str().unwrap() {
                    "Tee" => "Tee",
                    "Cap" => "Cap",
                    _ => "Bag",
                })
                .or_default();
            e.0 += line["quantity"].as_i64().unwrap();
            e.1 += line["total_cents"].as_i64().unwrap();
        }
    }
    let mut ranked: Vec<(&str, i64, i64)> = want.iter().map(|(t, (q, r))| (*t, *q, *r)).collect();
    ranked.sort_by_key(|p| std::cmp::Reverse(p.2));
    let range = "from=2026-11-01&to=2026-11-30";
    let all = shop
        .read(&format!(
            "analytics/top-products?{range}&include_total=true"
        ))
        .await;
    assert_eq!(all["total"], 3);
    let got: Vec<(&str, i64, i64)> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["title"].as_str().unwrap(),
                p["quantity"].as_i64().unwrap(),
                p["revenue_cents"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, ranked);

    // One a page, by cursor, in the same order.
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = shop
            .read(&format!(
                "analytics/top-products?{range}&limit=1&cursor={cursor}"
            ))
            .await;
        seen.push(page["data"][0]["product_id"].clone());
        if !page["has_more"].as_bool().unwrap() {
            break;
        }
        cursor = page["next_cursor"].as_str().unwrap().to_owned();
    }
    let ids: Vec<Value> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["product_id"].clone())
        .collect();
    assert_eq!(seen, ids);
    // A cursor belongs to its range.
    let first = shop
        .read(&format!("analytics/top-products?{range}&limit=1"))
        .await;
    let c = first["next_cursor"].as_str().unwrap();
    app.get_as(
        &shop.path(&format!(
            "analytics/top-products?from=2026-11-02&to=2026-11-30&limit=1&cursor={c}"
        )),
        &shop.token,
    )
    .await
    .expect_error(400, "invalid_cursor");
    // A range before any sale is empty.
    let none = shop
        .read("analytics/top-products?from=2026-10-01&to=2026-10-31")
        .await;
    assert_eq!(none["data"], json!([]));
}

/// The counters written beside each write equal a fresh aggregate of the orders, refunds
/// and customers: the backfill of migration V32 run again over the same rows.
#[tokio::test]
async fn the_counters_equal_a_fresh_aggregate_after_random_writes() {
    let shop = open_shop(100_000).await;
    let mut rng = Lcg(23);
    a_month_of_trade(&shop, &mut rng, 30).await;
    // Deleted customers leave the counts.
    for i in 0..3 {
        let c = shop.named_customer(&format!("Gone {i}")).await;
        shop.later(Duration::minutes(7)).await;
        if i != 1 {
            shop.app
                .call(
                    delete(),
                    &shop.path(&format!("customers/{}", c["id"].as_str().unwrap())),
                    &shop.token,
                    None,
                )
                .await
                .expect(204);
        }
    }
    let backfill = include_str!("../../migrations/V32__analytics.sql")
        .split_once("-- Backfill")
        .unwrap()
        .1
        .split_once('\n')
        .unwrap()
        .1;
    let (kept, fresh) = shop
        .app
        .state
        .db
        .write(move |tx| {
            let dump = |sql: &str| -> Result<Vec<String>, merchant_admin::error::AppError> {
                let mut stmt = tx.prepare(sql)?;
                let rows = stmt.query_map([], |r| {
                    let n = r.as_ref().column_count();
                    let cols: Vec<String> = (0..n)
                        .map(|i| r.get_ref(i).map(|v| format!("{v:?}")))
                        .collect::<Result<_, _>>()?;
                    Ok(cols.join("|"))
                })?;
                Ok(rows.collect::<Result<_, _>>()?)
            };
            let read = || -> Result<Vec<String>, merchant_admin::error::AppError> {
                let mut all = dump(
                    "SELECT * FROM analytics_buckets
                     WHERE orders != 0 OR revenue_cents != 0 OR refunds_cents != 0 OR new_customers != 0
                     ORDER BY store_id, bucket",
                )?;
                all.extend(dump(
                    "SELECT store_id, span, bucket, product_id, quantity, revenue_cents
                     FROM analytics_product_buckets ORDER BY 1, 2, 3, 4",
                )?);
                Ok(all)
            };
            let kept = read()?;
            tx.execute_batch("DELETE FROM analytics_buckets; DELETE FROM analytics_product_buckets;")?;
            tx.execute_batch(backfill)?;
            Ok((kept, read()?))
        })
        .await
        .unwrap();
    assert!(kept.len() > 40, "{}", kept.len());
    assert_eq!(kept, fresh);
}
