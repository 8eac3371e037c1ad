//! List totals (issue 22): the orders and reviews lists, 50 rows, with and without
//! `include_total=true`, unfiltered and by status, on a store of 100,000 orders and 100,000
//! reviews and then of 1,000,000 of each (seeded through the `bench-routes` seeding route, in
//! transactions of 5,000). Target: with the total at least 0.8x the requests/s of the same
//! list without, at both sizes, and p99 at 1,000,000 rows within 1.5x of p99 at 100,000.
//! Each list with its total alternates with the same list without, in rounds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Args, Call, Measured, Scenario};

/// The lists measured: (name, path under the store).
const LISTS: [(&str, &str); 8] = [
    ("orders limit=50", "orders?limit=50"),
    (
        "orders limit=50 +total",
        "orders?limit=50&include_total=true",
    ),
    ("orders status=paid", "orders?status=paid&limit=50"),
    (
        "orders status=paid +total",
        "orders?status=paid&limit=50&include_total=true",
    ),
    ("reviews limit=50", "reviews?limit=50"),
    (
        "reviews limit=50 +total",
        "reviews?limit=50&include_total=true",
    ),
    ("reviews status=pending", "reviews?status=pending&limit=50"),
    (
        "reviews status=pending +total",
        "reviews?status=pending&limit=50&include_total=true",
    ),
];

use super::post;

/// Seeds `n` more orders and reviews into the store.
async fn seed(client: &reqwest::Client, base: &str, token: &str, store: &str, n: i64) {
    let t = Instant::now();
    post(
        client,
        base,
        token,
        &format!("/v1/_bench/stores/{store}/seed"),
        json!({"orders": n, "reviews": n}),
    )
    .await;
    println!(
        "    (seeded {n} more orders and reviews in {:.1} s; load {})",
        t.elapsed().as_secs_f64(),
        super::load_average()
    );
}

/// Each list's total as the API answers it, so a broken seed shows.
async fn totals(client: &reqwest::Client, base: &str, token: &str, p: &str) -> String {
    let mut out = Vec::new();
    for (name, path) in LISTS.iter().filter(|(n, _)| n.ends_with("+total")) {
        let body: Value = client
            .get(format!("{base}{p}/{path}"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        out.push(format!(
            "{}: {}",
            name.trim_end_matches(" +total"),
            body["total"]
        ));
    }
    out.join(", ")
}

/// Rounds per pair. The list without its total and the same list with it alternate (and
/// swap which goes first), so the host's drift (other tenants, the page cache) falls on both
/// alike; one block each left single ratios 0.70 - 1.24x on a shared host.
const ROUNDS: u32 = 5;

/// Measures every list; (req/s, p99 ms) of each, in `LISTS` order.
fn measure(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    base: &Arc<String>,
    args: &Args,
    token: &str,
    p: &str,
    size: &str,
) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let round = Duration::from_secs_f64(args.seconds as f64 / f64::from(ROUNDS));
    for pair in LISTS.chunks(2) {
        let calls: Vec<Call> = pair
            .iter()
            .map(|(_, path)| Call {
                bearer: Some(token.to_owned()),
                ..Call::get(&format!("{p}/{path}"))
            })
            .collect();
        let mut sum: Vec<Measured> = (0..2)
            .map(|_| Measured {
                requests: 0,
                errors: 0,
                elapsed: Duration::ZERO,
                latencies: Vec::new(),
            })
            .collect();
        let mut ratios = Vec::new();
        rt.block_on(async {
            for call in &calls {
                for _ in 0..100 {
                    super::send(client, base, call).await; // warm up connections and caches
                }
            }
            for r in 0..ROUNDS {
                let mut rates = [0.0; 2];
                for i in if r % 2 == 0 { [0, 1] } else { [1, 0] } {
                    let until = Instant::now() + round;
                    let m = super::drive(client, base, &calls[i], args.connections, until).await;
                    #[expect(clippy::cast_precision_loss, reason = "a rate")]
                    let rate = m.requests as f64 / m.elapsed.as_secs_f64();
                    rates[i] = rate;
                    sum[i].requests += m.requests;
                    sum[i].errors += m.errors;
                    sum[i].elapsed += m.elapsed;
                    sum[i].latencies.extend(m.latencies);
                }
                ratios.push(format!("{:.2}", rates[1] / rates[0]));
            }
        });
        for ((name, _), m) in pair.iter().zip(&mut sum) {
            m.latencies.sort_unstable();
            let s = Scenario {
                name,
                call: Call::get(""),
                connections: None,
                background: None,
            };
            print!("{size:>4} ");
            super::report(&s, m, args);
            #[expect(clippy::cast_precision_loss, reason = "a rate")]
            let rps = m.requests as f64 / m.elapsed.as_secs_f64();
            out.push((rps, super::pct(&m.latencies, 0.99)));
        }
        println!("    (with / without, round by round: {})", ratios.join(" "));
    }
    println!("    (load {})", super::load_average());
    out
}

/// The whole phase (`--only totals`): a store of its own, measured at both sizes.
pub fn run(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    base: &Arc<String>,
    args: &Args,
    session: &str,
) {
    let (store, token) = rt.block_on(super::store_token(client, base, session, "Totals"));
    let p = format!("/v1/stores/{store}");
    rt.block_on(async {
        for n in 0..10 {
            post(client, base, &token, &format!("{p}/products"), json!({
                "title": format!("Product {n}"),
                "variants": [
                    {"sku": format!("T{n}-S"), "price_cents": 1990 + n, "on_hand": 100_000_000},
                    {"sku": format!("T{n}-M"), "price_cents": 2990 + n, "on_hand": 100_000_000}],
            }))
            .await;
        }
        for n in 0..21 {
            let body = json!({"name": format!("Customer {n}")});
            post(client, base, &token, &format!("{p}/customers"), body).await;
        }
        seed(client, base, &token, &store, 100_000).await;
        println!("    ({})", totals(client, base, &token, &p).await);
    });
    let small = measure(rt, client, base, args, &token, &p, "100k");
    if args.totals_small {
        return;
    }
    rt.block_on(async {
        seed(client, base, &token, &store, 900_000).await;
        println!("    ({})", totals(client, base, &token, &p).await);
    });
    let large = measure(rt, client, base, args, &token, &p, "1M");
    for (i, (name, _)) in LISTS
        .iter()
        .enumerate()
        .filter(|(_, (n, _))| n.ends_with("+total"))
    {
        println!(
            "    {name}: {:.2}x the list without (100k), {:.2}x (1M); p99 1M / 100k {:.2}",
            small[i].0 / small[i - 1].0,
            large[i].0 / large[i - 1].0,
            large[i].1 / small[i].1,
        );
    }
}
