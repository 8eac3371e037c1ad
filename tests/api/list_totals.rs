//! Issue 22: list totals. Lists with no filter or one status or id filter answer `total` from
//! counters the database keeps (`list_counts`, migration V36). After a randomized sequence of
//! writes through the API (creates, status changes, refunds, deletes, imports, checkouts, some
//! issued concurrently), the demo seeder and the cart purge, every counter equals a fresh
//! COUNT and every list's `total` equals the rows it pages through.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::storefront::Front;
use crate::support::{Reply, Shop, patch, post};

/// xorshift64*: the sequence is a function of the seed, printed on failure.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap()
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> Option<T> {
        (!items.is_empty()).then(|| items[self.below(items.len())].clone())
    }
}

/// Prints the seed when the test fails, so the sequence can be replayed
/// (`LIST_TOTALS_SEED=<seed>`).
struct SeedOnFailure(u64);

impl Drop for SeedOnFailure {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("list_totals: replay with LIST_TOTALS_SEED={}", self.0);
        }
    }
}

const ORDER_STATUSES: [&str; 8] = [
    "pending",
    "paid",
    "fulfilled",
    "shipped",
    "delivered",
    "cancelled",
    "partially_refunded",
    "refunded",
];
const REVIEW_STATUSES: [&str; 3] = ["pending", "approved", "rejected"];
const PRODUCT_STATUSES: [&str; 3] = ["draft", "active", "archived"];
const CONVERSATION_STATUSES: [&str; 4] = ["open", "pending", "resolved", "snoozed"];
const PRIORITIES: [&str; 5] = ["none", "low", "medium", "high", "urgent"];
const CART_STATUSES: [&str; 4] = ["open", "abandoned", "recovered", "converted"];

/// One write, its target chosen before the batch it runs in.
#[derive(Debug, Clone)]
enum Op {
    NewCustomer,
    DeleteCustomer(String),
    NewOrder {
        customer: String,
        manual: bool,
    },
    OrderStatus(String, String),
    Refund(String, i64),
    ImportReview {
        product: String,
        status: &'static str,
    },
    Moderate(String, &'static str),
    NewProduct(&'static str),
    ProductStatus(String, &'static str),
    DeleteProduct(String),
    NewCart,
    Checkout,
    /// A shopper opens a chat and, when `speaks`, says something (only then it is listed).
    NewConversation {
        speaks: bool,
    },
    Triage {
        id: String,
        field: &'static str,
        value: Value,
    },
}

/// Ids of one table of the store, read from the database to choose targets.
async fn ids(shop: &Shop, table: &'static str) -> Vec<String> {
    let store = shop.store.clone();
    shop.app
        .state
        .db
        .read(move |c| {
            let sql = format!("SELECT id FROM {table} WHERE store_id = ?1 ORDER BY id");
            let mut stmt = c.prepare(&sql)?;
            let rows = stmt.query_map([store], |r| r.get(0))?;
            Ok(rows.collect::<Result<Vec<String>, _>>()?)
        })
        .await
        .unwrap()
}

/// Chooses one write from the store as it is now.
async fn choose(shop: &Shop, rng: &mut Rng) -> Op {
    loop {
        let op = match rng.below(14) {
            0 => Some(Op::NewCustomer),
            1 => rng
                .pick(&ids(shop, "customers").await)
                .map(Op::DeleteCustomer),
            2 | 3 => rng
                .pick(&ids(shop, "customers").await)
                .map(|customer| Op::NewOrder {
                    customer,
                    manual: rng.below(3) == 0,
                }),
            4 | 5 => match rng.pick(&ids(shop, "orders").await) {
                Some(id) => {
                    let order = shop.read(&format!("orders/{id}")).await;
                    let next: Vec<String> = order["allowed_status_transitions"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|s| s.as_str().unwrap().to_owned())
                        .collect();
                    let left = order["total_cents"].as_i64().unwrap()
                        - order["refunded_cents"].as_i64().unwrap();
                    let paid = !matches!(order["status"].as_str(), Some("pending" | "cancelled"));
                    if paid && left > 0 && rng.below(2) == 0 {
                        let amount = if rng.below(2) == 0 { left } else { 1 };
                        Some(Op::Refund(id, amount))
                    } else {
                        // Mostly paid, so that refunds find orders to refund.
                        let pay = next.iter().any(|s| s == "paid") && rng.below(3) != 0;
                        let to = if pay {
                            Some("paid".to_owned())
                        } else {
                            rng.pick(&next)
                        };
                        to.map(|s| Op::OrderStatus(id, s))
                    }
                }
                None => None,
            },
            6 => rng
                .pick(&ids(shop, "products").await)
                .map(|product| Op::ImportReview {
                    product,
                    status: REVIEW_STATUSES[rng.below(3)],
                }),
            7 => rng
                .pick(&ids(shop, "reviews").await)
                .map(|id| Op::Moderate(id, REVIEW_STATUSES[rng.below(3)])),
            8 => Some(Op::NewProduct(PRODUCT_STATUSES[rng.below(3)])),
            9 => {
                let products = ids(shop, "products").await;
                // The shop's own product (first variant) stays: orders and carts need it.
                let keep = shop.product().await["id"].as_str().unwrap().to_owned();
                let others: Vec<String> = products.into_iter().filter(|p| *p != keep).collect();
                match rng.pick(&others) {
                    Some(p) if rng.below(2) == 0 => Some(Op::DeleteProduct(p)),
                    Some(p) => Some(Op::ProductStatus(p, PRODUCT_STATUSES[rng.below(3)])),
                    None => None,
                }
            }
            10 => Some(Op::NewCart),
            11 => Some(Op::Checkout),
            12 => Some(Op::NewConversation {
                speaks: rng.below(4) != 0,
            }),
            _ => {
                let owner = owner_id(shop).await;
                rng.pick(&ids(shop, "conversations").await).map(|id| {
                    let (field, value) = match rng.below(3) {
                        0 => (
                            "status",
                            json!(["open", "pending", "resolved"][rng.below(3)]),
                        ),
                        1 => ("priority", json!(PRIORITIES[rng.below(5)])),
                        _ if rng.below(2) == 0 => ("assignee_user_id", Value::Null),
                        _ => ("assignee_user_id", json!(owner)),
                    };
                    Op::Triage { id, field, value }
                })
            }
        };
        if let Some(op) = op {
            return op;
        }
    }
}

/// The shop owner's user id (the store's only member).
async fn owner_id(shop: &Shop) -> String {
    let store = shop.store.clone();
    shop.app
        .state
        .db
        .read(move |c| {
            Ok(c.query_row(
                "SELECT user_id FROM store_members WHERE store_id = ?1 LIMIT 1",
                [store],
                |r| r.get::<_, String>(0),
            )?)
        })
        .await
        .unwrap()
}

/// Runs one write; what it answered does not matter (a refused write counts nothing), only
/// that it did not fail inside.
async fn run(shop: &Shop, front: &Front<'_>, op: Op) -> Reply {
    let call = |method: reqwest::Method, rest: String, body: Option<Value>| async move {
        shop.app
            .call(method, &shop.path(&rest), &shop.token, body)
            .await
    };
    let n = unique();
    match op {
        Op::NewCustomer => {
            let body =
                json!({"name": format!("Customer {n}"), "email": format!("c{n}@example.com")});
            call(post(), "customers".into(), Some(body)).await
        }
        Op::DeleteCustomer(id) => {
            call(reqwest::Method::DELETE, format!("customers/{id}"), None).await
        }
        Op::NewOrder { customer, manual } => {
            let body = json!({"customer_id": customer,
                              "items": [{"variant_id": shop.variants[0], "quantity": 1}]});
            let rest = if manual { "orders/manual" } else { "orders" };
            call(post(), rest.into(), Some(body)).await
        }
        Op::OrderStatus(id, status) => {
            call(
                patch(),
                format!("orders/{id}"),
                Some(json!({"status": status})),
            )
            .await
        }
        Op::Refund(id, amount) => {
            let body = json!({"amount_cents": amount});
            call(post(), format!("orders/{id}/refund"), Some(body)).await
        }
        Op::ImportReview { product, status } => {
            let body = json!({"product_id": product, "author_name": "Ana",
                              "author_email": "ana@example.com", "title": "Fine",
                              "body": "Fits.", "rating": 1 + i64::from(n % 5), "status": status});
            call(post(), "reviews".into(), Some(body)).await
        }
        Op::Moderate(id, status) => {
            call(
                patch(),
                format!("reviews/{id}"),
                Some(json!({"status": status})),
            )
            .await
        }
        Op::NewProduct(status) => {
            let body = json!({"title": format!("Product {n}"), "status": status,
                              "variants": [{"sku": format!("SKU-{n}"), "price_cents": 1000,
                                            "on_hand": 10}]});
            call(post(), "products".into(), Some(body)).await
        }
        Op::ProductStatus(id, status) => {
            call(
                patch(),
                format!("products/{id}"),
                Some(json!({"status": status})),
            )
            .await
        }
        Op::DeleteProduct(id) => {
            call(reqwest::Method::DELETE, format!("products/{id}"), None).await
        }
        Op::NewCart => {
            let cart = front.new_cart().await;
            front.add(&cart, &shop.variants[1], 1).await
        }
        Op::Checkout => {
            let cart = front
                .filled_cart(&shop.variants[1], 1, &format!("shopper{n}@example.com"))
                .await;
            front.checkout(&cart).await
        }
        Op::NewConversation { speaks } => {
            let v = shop
                .app
                .visitor(&front.key, json!({"name": format!("Visitor {n}")}))
                .await;
            if speaks {
                shop.app.visitor_says(&v, "Is it in stock?").await
            } else {
                shop.app.get(&front.path("products")).await
            }
        }
        Op::Triage { id, field, value } => {
            let mut body = json!({});
            body[field] = value;
            call(patch(), format!("conversations/{id}"), Some(body)).await
        }
    }
}

/// A number that differs between writes (names, SKUs and e-mails must not collide).
fn unique() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// What each counted list holds, counted afresh: (list, key) -> rows, for every store.
async fn fresh_counts(shop: &Shop) -> BTreeMap<(String, String, String), i64> {
    let sql = "
        SELECT store_id, 'orders', '', COUNT(*) FROM orders GROUP BY store_id
        UNION ALL SELECT store_id, 'orders', 'status:' || status, COUNT(*) FROM orders
            GROUP BY store_id, status
        UNION ALL SELECT store_id, 'orders', 'customer_id:' || customer_id, COUNT(*) FROM orders
            WHERE customer_id IS NOT NULL GROUP BY store_id, customer_id
        UNION ALL SELECT store_id, 'orders', 'month:' || substr(created_at, 1, 7), COUNT(*)
            FROM orders GROUP BY store_id, substr(created_at, 1, 7)
        UNION ALL SELECT store_id, 'reviews', '', COUNT(*) FROM reviews GROUP BY store_id
        UNION ALL SELECT store_id, 'reviews', 'status:' || status, COUNT(*) FROM reviews
            GROUP BY store_id, status
        UNION ALL SELECT store_id, 'reviews', 'product_id:' || product_id, COUNT(*) FROM reviews
            GROUP BY store_id, product_id
        UNION ALL SELECT store_id, 'customers', '', COUNT(*) FROM customers GROUP BY store_id
        UNION ALL SELECT store_id, 'carts', '', COUNT(*) FROM carts GROUP BY store_id
        UNION ALL SELECT store_id, 'carts', 'status:' || status, COUNT(*) FROM carts
            GROUP BY store_id, status
        UNION ALL SELECT store_id, 'products', '', COUNT(*) FROM products GROUP BY store_id
        UNION ALL SELECT store_id, 'products', 'status:' || status, COUNT(*) FROM products
            GROUP BY store_id, status
        UNION ALL SELECT store_id, 'conversations', k, COUNT(*) FROM (
            SELECT store_id, '' AS k FROM conversations WHERE last_message_at IS NOT NULL
            UNION ALL SELECT store_id, 'status:' || status FROM conversations
                WHERE last_message_at IS NOT NULL
            UNION ALL SELECT store_id, 'channel_kind:' || channel_kind FROM conversations
                WHERE last_message_at IS NOT NULL
            UNION ALL SELECT store_id, 'priority:' || priority FROM conversations
                WHERE last_message_at IS NOT NULL
            UNION ALL SELECT store_id, 'assignee_user_id:' || COALESCE(assignee_user_id, '')
                FROM conversations WHERE last_message_at IS NOT NULL)
            GROUP BY store_id, k";
    rows(shop, sql).await
}

/// The counters, without those at 0 (a counter at 0 is a list that emptied).
async fn counters(shop: &Shop) -> BTreeMap<(String, String, String), i64> {
    rows(
        shop,
        "SELECT store_id, list, key, n FROM list_counts WHERE n != 0",
    )
    .await
}

async fn rows(shop: &Shop, sql: &'static str) -> BTreeMap<(String, String, String), i64> {
    shop.app
        .state
        .db
        .read(move |c| {
            let mut stmt = c.prepare(sql)?;
            let found =
                stmt.query_map([], |r| Ok(((r.get(0)?, r.get(1)?, r.get(2)?), r.get(3)?)))?;
            Ok(found.collect::<Result<BTreeMap<_, _>, _>>()?)
        })
        .await
        .unwrap()
}

/// A fresh COUNT of the store's rows of `table` under `filter` (SQL over `store_id = ?1`).
async fn count_where(shop: &Shop, table: &str, filter: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM {table} WHERE store_id = ?1 {filter}");
    let store = shop.store.clone();
    shop.app
        .state
        .db
        .read(move |c| Ok(c.query_row(&sql, [store], |r| r.get(0))?))
        .await
        .unwrap()
}

/// `total` of a list of the store.
async fn total(shop: &Shop, rest: &str) -> i64 {
    shop.app.total(&shop.token, &shop.path(rest)).await
}

/// Every counter equals a fresh count, and every counted list's `total` (each filter value
/// in use) equals a fresh COUNT of what that list shows.
async fn check(shop: &Shop, when: &str) {
    assert_eq!(
        counters(shop).await,
        fresh_counts(shop).await,
        "counters {when}"
    );
    let mut lists: Vec<(String, String, String)> = vec![
        ("orders".into(), "orders?".into(), String::new()),
        ("reviews".into(), "reviews?".into(), String::new()),
        ("customers".into(), "customers?".into(), String::new()),
        ("carts".into(), "carts?".into(), String::new()),
        ("products".into(), "products?".into(), String::new()),
        // Free text: a capped count, exact below 10,000.
        (
            "customers".into(),
            "customers?search=example".into(),
            "AND email LIKE '%example%'".into(),
        ),
    ];
    for s in ORDER_STATUSES {
        lists.push((
            "orders".into(),
            format!("orders?status={s}"),
            format!("AND status = '{s}'"),
        ));
    }
    for c in ids(shop, "customers").await {
        lists.push((
            "orders".into(),
            format!("orders?customer_id={c}"),
            format!("AND customer_id = '{c}'"),
        ));
        // Two filters: a capped count.
        lists.push((
            "orders".into(),
            format!("orders?customer_id={c}&status=paid"),
            format!("AND customer_id = '{c}' AND status = 'paid'"),
        ));
    }
    for s in REVIEW_STATUSES {
        lists.push((
            "reviews".into(),
            format!("reviews?status={s}"),
            format!("AND status = '{s}'"),
        ));
    }
    for p in ids(shop, "products").await {
        lists.push((
            "reviews".into(),
            format!("reviews?product_id={p}"),
            format!("AND product_id = '{p}'"),
        ));
    }
    for s in CART_STATUSES {
        lists.push((
            "carts".into(),
            format!("carts?status={s}"),
            format!("AND status = '{s}'"),
        ));
    }
    for s in PRODUCT_STATUSES {
        lists.push((
            "products".into(),
            format!("products?status={s}"),
            format!("AND status = '{s}'"),
        ));
    }
    let listed = "AND last_message_at IS NOT NULL";
    lists.push((
        "conversations".into(),
        "conversations?".into(),
        listed.into(),
    ));
    for s in CONVERSATION_STATUSES {
        let f = format!("{listed} AND status = '{s}'");
        lists.push((
            "conversations".into(),
            format!("conversations?status={s}"),
            f,
        ));
    }
    for p in PRIORITIES {
        let f = format!("{listed} AND priority = '{p}'");
        lists.push((
            "conversations".into(),
            format!("conversations?priority={p}"),
            f,
        ));
    }
    let f = format!("{listed} AND channel_kind = 'storefront_chat'");
    lists.push((
        "conversations".into(),
        "conversations?channel_kind=storefront_chat".into(),
        f,
    ));
    let f = format!("{listed} AND assignee_user_id IS NULL");
    lists.push((
        "conversations".into(),
        "conversations?assignee=none".into(),
        f,
    ));
    let owner = owner_id(shop).await;
    let f = format!("{listed} AND assignee_user_id = '{owner}'");
    lists.push((
        "conversations".into(),
        "conversations?assignee=me".into(),
        f.clone(),
    ));
    // Two filters: a capped count.
    lists.push((
        "conversations".into(),
        "conversations?assignee=me&status=open".into(),
        format!("{f} AND status = 'open'"),
    ));
    for (table, rest, filter) in &lists {
        let expected = count_where(shop, table, filter).await;
        assert_eq!(total(shop, rest).await, expected, "total of {rest} {when}");
    }
    // The unfiltered lists' totals are also what paging through them finds.
    for list in [
        "orders",
        "reviews",
        "customers",
        "carts",
        "products",
        "conversations",
    ] {
        let (mut seen, mut cursor) = (0, None::<String>);
        loop {
            let rest = match &cursor {
                Some(c) => format!("{list}?limit=200&cursor={c}"),
                None => format!("{list}?limit=200"),
            };
            let page = shop.read(&rest).await;
            seen += page["data"].as_array().unwrap().len();
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(
            total(shop, &format!("{list}?")).await,
            i64::try_from(seen).unwrap(),
            "{list} paged {when}"
        );
    }
}

#[tokio::test]
async fn every_counter_equals_a_fresh_count_after_random_writes() {
    let seed = std::env::var("LIST_TOTALS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos();
            u64::from(nanos) | 1
        });
    let _print = SeedOnFailure(seed);
    let mut rng = Rng(seed);
    let app = crate::support::spawn_app_with(|c| c.checkouts_per_hour = 1_000).await;
    let shop = Shop::open(app, 1_000_000).await;
    let front = Front::of(&shop).await;
    for _ in 0..4 {
        run(&shop, &front, Op::NewCustomer).await.expect(201);
    }
    check(&shop, "at the start").await;

    // Each kind of write: (done, refused), shown with `--nocapture`.
    let mut tally = BTreeMap::<String, (u32, u32)>::new();
    for step in 0..60 {
        // Every third batch runs four writes at once.
        let width = if step % 3 == 2 { 4 } else { 1 };
        let mut ops = Vec::new();
        for _ in 0..width {
            ops.push(choose(&shop, &mut rng).await);
        }
        let replies =
            futures::future::join_all(ops.iter().cloned().map(|op| run(&shop, &front, op))).await;
        for (op, r) in ops.iter().zip(&replies) {
            assert!(r.status.as_u16() < 500, "{op:?}: {} {}", r.status, r.text);
            let kind = format!("{op:?}");
            let kind = kind.split([' ', '(', '{']).next().unwrap().to_owned();
            let seen = tally.entry(kind).or_insert((0, 0));
            if r.status.is_success() {
                seen.0 += 1;
            } else {
                seen.1 += 1;
                eprintln!("refused {op:?}: {} {}", r.status, r.text);
            }
        }
        if step % 15 == 14 {
            check(&shop, &format!("after step {step}")).await;
        }
    }

    eprintln!("list_totals seed {seed}: {tally:?}");

    // The demo seeder's bulk writes (the benchmark's seeding route) count too; it needs a
    // customer.
    run(&shop, &front, Op::NewCustomer).await.expect(201);
    let (store, now) = (shop.store.parse().unwrap(), shop.app.clock_now());
    shop.app
        .state
        .db
        .write(move |tx| {
            merchant_admin::setup::demo::bulk(
                tx,
                store,
                30,
                30,
                7,
                now,
                chrono::Duration::seconds(1),
            )
        })
        .await
        .unwrap();
    check(&shop, "after the demo seeder").await;

    // The cleanup purges stale carts; the counters follow.
    shop.app.clock.advance(chrono::Duration::days(31));
    shop.app.run_cleanup().await;
    shop.app.drain_jobs().await;
    assert_eq!(
        counters(&shop).await,
        fresh_counts(&shop).await,
        "counters after the purge"
    );
}
