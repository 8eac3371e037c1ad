//! Rate limits (spec 8, issue 2 §4): a budget per minute per credential, and a smaller one
//! per client address for anonymous calls. GCRA from `governor`, driven by the app's clock.
//! Every response carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`:
//! those of the general budget, unless the handler charged a budget of its own and reported
//! that one (see [`with_budget`]).

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::Clock as _;
use governor::middleware::{NoOpMiddleware, StateInformationMiddleware};
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

use super::trace::{ClientAddr, budget_key};
use crate::clock::SharedClock;
use crate::error::AppError;
use crate::state::AppState;

/// Adapts the app clock to governor, so tests that move the clock move the budgets too.
#[derive(Clone)]
pub struct LimiterClock(SharedClock);

impl governor::clock::Clock for LimiterClock {
    type Instant = Duration;
    fn now(&self) -> Duration {
        let t = self.0.now();
        let nanos = t.timestamp_nanos_opt().unwrap_or(0);
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(0))
    }
}

type Limiter =
    RateLimiter<String, DefaultKeyedStateStore<String>, LimiterClock, StateInformationMiddleware>;

/// Who a request is charged to, once authentication has run (identity issue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialId(pub String);

pub struct RateLimits {
    authenticated: Limiter,
    anonymous: Limiter,
    /// `POST /auth/register` per client address, on top of the general budget.
    registrations: Limiter,
    /// Storefront checkouts per client address, on top of the general budget.
    checkouts: Limiter,
    /// Documentation questions per visitor per hour, on top of the general budget.
    questions: Limiter,
    /// Documentation questions per day across everyone (one key).
    questions_daily: Limiter,
    clock: LimiterClock,
}

/// The outcome of one check, with what the headers report.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub limit: u32,
    pub remaining: u32,
    pub reset_secs: u64,
    /// Set when the request is refused.
    pub retry_after_secs: Option<u64>,
}

fn per_minute(n: u32) -> Quota {
    Quota::per_minute(NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN))
}

fn per_hour(n: u32) -> Quota {
    Quota::per_hour(NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN))
}

/// `n` a day, as a GCRA budget: all `n` at once, each coming back a day after it was used
/// (one every `24 h / n`), so no day sees more than `n` plus what came back during it.
fn per_day(n: u32) -> Quota {
    let n = NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(Duration::from_secs(86_400) / n.get())
        .unwrap_or_else(|| Quota::per_second(NonZeroU32::MAX))
        .allow_burst(n)
}

impl RateLimits {
    pub fn new(cfg: &crate::config::Config, clock: SharedClock) -> Self {
        let clock = LimiterClock(clock);
        let make = |quota| {
            RateLimiter::<_, _, _, NoOpMiddleware<Duration>>::new(
                quota,
                DefaultKeyedStateStore::default(),
                clock.clone(),
            )
            .with_middleware::<StateInformationMiddleware>()
        };
        Self {
            authenticated: make(per_minute(cfg.rate_limit_authenticated)),
            anonymous: make(per_minute(cfg.rate_limit_anonymous)),
            registrations: make(per_hour(cfg.register_per_hour)),
            checkouts: make(per_hour(cfg.checkouts_per_hour)),
            questions: make(per_hour(cfg.docs_hourly_limit)),
            questions_daily: make(per_day(cfg.docs_daily_limit)),
            clock,
        }
    }

    /// Charges one request to a credential, or to a client address when there is none.
    pub fn check(&self, credential: Option<&CredentialId>, addr: IpAddr) -> Budget {
        match credential {
            Some(c) => self.charge(&self.authenticated, &format!("cred:{}", c.0)),
            None => self.charge(&self.anonymous, &format!("ip:{}", budget_key(addr))),
        }
    }

    /// Charges one registration to a client address.
    pub fn check_registration(&self, addr: IpAddr) -> Budget {
        self.charge(&self.registrations, &format!("ip:{}", budget_key(addr)))
    }

    /// Charges one storefront checkout to a client address.
    pub fn check_checkout(&self, addr: IpAddr) -> Budget {
        self.charge(&self.checkouts, &format!("ip:{}", budget_key(addr)))
    }

    /// Charges one documentation question to a visitor (any key the caller chose for it),
    /// then to the daily total. Returns the budget that refused, else the visitor's. A
    /// question the visitor's budget refuses is not charged to the total, so one visitor
    /// cannot use it up by asking past their own limit.
    pub fn check_question(&self, visitor: &str) -> Budget {
        let own = self.charge(&self.questions, visitor);
        if own.retry_after_secs.is_some() {
            return own;
        }
        let all = self.charge(&self.questions_daily, "all");
        if all.retry_after_secs.is_some() {
            return all;
        }
        own
    }

    fn charge(&self, limiter: &Limiter, key: &str) -> Budget {
        match limiter.check_key(&key.to_owned()) {
            Ok(snapshot) => {
                let quota = snapshot.quota();
                let limit = quota.burst_size().get();
                let remaining = snapshot.remaining_burst_capacity();
                // Time until the whole budget is back: one interval per used cell.
                let reset = quota.replenish_interval() * (limit - remaining);
                Budget {
                    limit,
                    remaining,
                    reset_secs: ceil_secs(reset),
                    retry_after_secs: None,
                }
            }
            Err(not_until) => {
                let quota = not_until.quota();
                let limit = quota.burst_size().get();
                let wait = not_until.wait_time_from(self.clock.now());
                // One cell comes back after `wait`, the rest one interval apart.
                let full = wait + quota.replenish_interval() * (limit - 1);
                Budget {
                    limit,
                    remaining: 0,
                    reset_secs: ceil_secs(full),
                    retry_after_secs: Some(ceil_secs(wait).max(1)),
                }
            }
        }
    }

    /// Forgets budgets that are full again (run periodically by the scheduler).
    pub fn forget_idle(&self) {
        for l in [
            &self.authenticated,
            &self.anonymous,
            &self.registrations,
            &self.questions,
        ] {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

fn set_headers(h: &mut HeaderMap, b: &Budget) {
    // A handler that charged a budget of its own reported that one: keep it.
    if h.contains_key("ratelimit-limit") {
        return;
    }
    h.insert("ratelimit-limit", HeaderValue::from(b.limit));
    h.insert("ratelimit-remaining", HeaderValue::from(b.remaining));
    h.insert("ratelimit-reset", HeaderValue::from(b.reset_secs));
}

/// Reports `b` in the `RateLimit-*` headers of a handler's response, in place of the
/// general budget the middleware would report.
pub fn with_budget(mut res: Response, b: &Budget) -> Response {
    set_headers(res.headers_mut(), b);
    res
}

/// The middleware: 429 `rate_limited` with `Retry-After` past the budget.
/// The admin app's own files (`/`, `/admin`, `/admin/...`): static, served from memory, and
/// some 15 to 30 of them per page load, all revalidated on each; on the anonymous budget a
/// team behind one address would run out of it just by opening the app.
fn is_app_file(req: &Request) -> bool {
    let path = req.uri().path();
    (req.method() == axum::http::Method::GET || req.method() == axum::http::Method::HEAD)
        && (path == "/" || path == "/admin" || path.starts_with("/admin/"))
}

pub async fn rate_limit(State(st): State<AppState>, req: Request, next: Next) -> Response {
    if is_app_file(&req) {
        return next.run(req).await;
    }
    let addr = req
        .extensions()
        .get::<ClientAddr>()
        .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.0);
    let budget = st
        .limits
        .check(req.extensions().get::<CredentialId>(), addr);
    let mut res = match budget.retry_after_secs {
        Some(wait) => AppError::rate_limited(wait).into_response(),
        None => next.run(req).await,
    };
    set_headers(res.headers_mut(), &budget);
    res
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn credentials_and_addresses_have_separate_budgets() {
        let clock = ManualClock::new(chrono::Utc::now());
        let mut cfg = crate::config::Config::new("unused".into());
        (cfg.rate_limit_authenticated, cfg.rate_limit_anonymous) = (3, 1);
        let limits = RateLimits::new(&cfg, clock.clone() as SharedClock);
        let addr = IpAddr::from([192, 0, 2, 1]);
        let (alice, bob) = (CredentialId("alice".into()), CredentialId("bob".into()));

        assert!(limits.check(None, addr).retry_after_secs.is_none());
        assert_eq!(
            limits.check(None, addr).retry_after_secs,
            Some(60),
            "1/min anonymous"
        );
        // The same address with a credential is charged to the credential's budget.
        for left in [2, 1, 0] {
            let b = limits.check(Some(&alice), addr);
            assert_eq!((b.limit, b.remaining, b.retry_after_secs), (3, left, None));
        }
        let refused = limits.check(Some(&alice), addr);
        assert_eq!(refused.retry_after_secs, Some(20));
        assert_eq!(
            refused.reset_secs, 60,
            "the whole budget is back in a minute"
        );
        assert!(
            limits.check(Some(&bob), addr).retry_after_secs.is_none(),
            "per credential"
        );

        clock.advance(chrono::Duration::seconds(20));
        assert!(limits.check(Some(&alice), addr).retry_after_secs.is_none());
    }
}
