//! The plan catalog (issue 17; spec 2.12, 4.4): what the operator sells. Every plan has
//! every module; plans differ in size (their limits) and price, in BRL cents. The catalog
//! ships with defaults and can be replaced by a file (`--plans-file`, TOML or JSON), checked
//! when the server starts: a bad file stops it with a message naming the line.

use std::collections::HashSet;
use std::path::Path;

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::AppError;
use crate::http::extract::Json;
use crate::http::page::Page;
use crate::state::AppState;

/// How big an organization on a plan may grow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub stores: i64,
    pub members_per_store: i64,
    pub products: i64,
    pub orders_per_month: i64,
    pub assistant_messages_per_store_per_month: i64,
}

/// A plan as the catalog lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Plan {
    /// Stable identifier (`POST /tenants`'s `plan_code`).
    pub code: String,
    pub name: String,
    pub description: String,
    /// Always `BRL`.
    pub currency: String,
    pub monthly_price_cents: i64,
    /// The price of twelve months paid at once.
    pub annual_price_cents: i64,
    pub limits: Limits,
}

/// The operator's catalog: its plans in order, and the one a new organization starts on.
#[derive(Debug, Clone)]
pub struct Catalog {
    pub plans: Vec<Plan>,
    pub default_code: String,
}

/// A plan as a catalog file writes it (the currency is not the file's to choose).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanIn<C> {
    /// Where TOML wrote it (`toml::Spanned`); a plain string from JSON.
    code: C,
    name: String,
    #[serde(default)]
    description: String,
    monthly_price_cents: i64,
    annual_price_cents: i64,
    limits: Limits,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogIn<C> {
    /// The plan new organizations start their trial on (default: the first).
    default: Option<String>,
    plans: Vec<PlanIn<C>>,
}

fn plan(code: &str, name: &str, description: &str, monthly: i64, limits: Limits) -> Plan {
    Plan {
        code: code.into(),
        name: name.into(),
        description: description.into(),
        currency: "BRL".into(),
        monthly_price_cents: monthly,
        // Two months free for paying the year at once.
        annual_price_cents: monthly * 10,
        limits,
    }
}

impl Default for Catalog {
    /// What the binary ships with: three sizes, trials on the middle one.
    fn default() -> Self {
        let limits = |stores, members_per_store, products, orders_per_month, assistant| Limits {
            stores,
            members_per_store,
            products,
            orders_per_month,
            assistant_messages_per_store_per_month: assistant,
        };
        Self {
            plans: vec![
                plan(
                    "starter",
                    "Starter",
                    "One store and a small team getting started.",
                    4_900,
                    limits(1, 3, 100, 500, 200),
                ),
                plan(
                    "growth",
                    "Growth",
                    "A few stores, a bigger catalog and team.",
                    14_900,
                    limits(3, 10, 2_000, 5_000, 1_000),
                ),
                plan(
                    "scale",
                    "Scale",
                    "Many stores and large catalogs.",
                    39_900,
                    limits(10, 50, 50_000, 50_000, 5_000),
                ),
            ],
            default_code: "growth".into(),
        }
    }
}

/// The 1-based line of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

impl Catalog {
    /// Reads and checks a catalog file: `.json` as JSON, anything else as TOML. The error
    /// names the file and the line.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let name = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("--plans-file {name}: {e}"))?;
        let json = path.extension().is_some_and(|e| e == "json");
        let parsed: CatalogIn<toml::Spanned<String>> = if json {
            let c: CatalogIn<String> = serde_json::from_str(&text)
                .map_err(|e| anyhow::anyhow!("--plans-file {name}: line {}: {e}", e.line()))?;
            CatalogIn {
                default: c.default,
                plans: c
                    .plans
                    .into_iter()
                    .map(|p| PlanIn {
                        code: toml::Spanned::new(0..0, p.code),
                        name: p.name,
                        description: p.description,
                        monthly_price_cents: p.monthly_price_cents,
                        annual_price_cents: p.annual_price_cents,
                        limits: p.limits,
                    })
                    .collect(),
            }
        } else {
            toml::from_str(&text).map_err(|e| {
                let line = e.span().map_or(0, |s| line_of(&text, s.start));
                anyhow::anyhow!("--plans-file {name}: line {line}: {}", e.message())
            })?
        };
        Self::check(parsed, &text, json)
            .map_err(|(line, why)| anyhow::anyhow!("--plans-file {name}: line {line}: {why}"))
    }

    /// The catalog's rules, each refusal with the line of the plan it is about.
    fn check(
        c: CatalogIn<toml::Spanned<String>>,
        text: &str,
        json: bool,
    ) -> Result<Self, (usize, String)> {
        if c.plans.is_empty() {
            return Err((1, "the catalog has no plans".into()));
        }
        let mut seen = HashSet::new();
        let mut plans = Vec::with_capacity(c.plans.len());
        for p in c.plans {
            // TOML keeps where each value was; JSON does not, so the code's first mention.
            let line = if json {
                text.find(&format!("\"{}\"", p.code.get_ref()))
                    .map_or(1, |at| line_of(text, at))
            } else {
                line_of(text, p.code.span().start)
            };
            let code = p.code.into_inner();
            let why = if code.is_empty()
                || code.len() > 40
                || !code
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
            {
                Some(format!("plan code {code:?}: 1 to 40 of a-z, 0-9, - and _"))
            } else if !seen.insert(code.clone()) {
                Some(format!("plan code {code:?} appears twice"))
            } else if p.name.trim().is_empty() || p.name.chars().count() > 80 {
                Some(format!("plan {code}: name must be 1 to 80 characters"))
            } else if ![p.monthly_price_cents, p.annual_price_cents]
                .iter()
                .all(|c| (1..=99_999_999_999).contains(c))
            {
                // An invoice is paid by Pix, which asks at least one cent and at most what
                // a BR Code's amount field holds.
                Some(format!(
                    "plan {code}: prices are cents, at least 1 and at most 99999999999"
                ))
            } else if [
                p.limits.stores,
                p.limits.members_per_store,
                p.limits.products,
                p.limits.orders_per_month,
                p.limits.assistant_messages_per_store_per_month,
            ]
            .iter()
            .any(|l| *l < 1)
            {
                Some(format!("plan {code}: every limit must be at least 1"))
            } else {
                None
            };
            if let Some(why) = why {
                return Err((line, why));
            }
            plans.push(Plan {
                code,
                name: p.name.trim().to_owned(),
                description: p.description,
                currency: "BRL".into(),
                monthly_price_cents: p.monthly_price_cents,
                annual_price_cents: p.annual_price_cents,
                limits: p.limits,
            });
        }
        let default_code = match c.default {
            Some(d) if plans.iter().any(|p| p.code == d) => d,
            Some(d) => {
                let line = text.find("default").map_or(1, |at| line_of(text, at));
                return Err((line, format!("default plan {d:?} is not in the catalog")));
            }
            None => plans[0].code.clone(),
        };
        Ok(Self {
            plans,
            default_code,
        })
    }

    pub fn get(&self, code: &str) -> Option<&Plan> {
        self.plans.iter().find(|p| p.code == code)
    }

    /// The plan a subscription's code names, else the default: no code (organizations made
    /// before billing), or a plan the operator has since taken out of the catalog.
    pub fn plan_or_default(&self, code: Option<&str>) -> Result<&Plan, AppError> {
        code.and_then(|c| self.get(c))
            .or_else(|| self.get(&self.default_code))
            .ok_or_else(|| AppError::internal(anyhow::anyhow!("the catalog has no default plan")))
    }
}

/// The plans on sale, in the operator's order (public). A short fixed list: one page.
#[utoipa::path(get, path = "/billing/plans", tag = "billing",
    responses((status = 200, body = Page<Plan>)))]
pub async fn list_plans(State(st): State<AppState>) -> Result<Json<Page<Plan>>, AppError> {
    Ok(Json(Page::whole(st.cfg.plans.plans.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(name: &str, text: &str) -> anyhow::Result<Catalog> {
        let dir = tempfile_dir();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        Catalog::load(&path)
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("plans-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    const GOOD: &str = r#"default = "b"

[[plans]]
code = "a"
name = "A"
monthly_price_cents = 1000
annual_price_cents = 10000
limits = { stores = 1, members_per_store = 2, products = 3, orders_per_month = 4, assistant_messages_per_store_per_month = 5 }

[[plans]]
code = "b"
name = "B"
description = "Bigger"
monthly_price_cents = 2000
annual_price_cents = 20000
limits = { stores = 2, members_per_store = 2, products = 3, orders_per_month = 4, assistant_messages_per_store_per_month = 5 }
"#;

    #[test]
    fn a_catalog_file_replaces_the_defaults() {
        let c = load("plans.toml", GOOD).unwrap();
        assert_eq!(c.plans.len(), 2);
        assert_eq!(c.default_code, "b");
        assert_eq!(c.get("b").unwrap().description, "Bigger");
        assert_eq!(c.get("a").unwrap().currency, "BRL");
        let json = r#"{"plans": [{"code": "only", "name": "Only", "monthly_price_cents": 1,
            "annual_price_cents": 10, "limits": {"stores": 1, "members_per_store": 1,
            "products": 1, "orders_per_month": 1, "assistant_messages_per_store_per_month": 1}}]}"#;
        let c = load("plans.json", json).unwrap();
        assert_eq!(c.default_code, "only", "the first plan when none is named");
    }

    #[test]
    fn a_bad_catalog_is_refused_naming_the_line() {
        let cases = [
            (
                GOOD.replace("code = \"b\"", "code = \"a\""),
                "line 11",
                "appears twice",
            ),
            (
                GOOD.replace("stores = 2,", "stores = 0,"),
                "line 11",
                "at least 1",
            ),
            (
                GOOD.replace("monthly_price_cents = 2000", "monthly_price_cents = \"x\""),
                "line 14",
                "",
            ),
            (
                GOOD.replace("default = \"b\"", "default = \"z\""),
                "line 1",
                "not in the catalog",
            ),
            (
                GOOD.replace("name = \"A\"", "name = \"A\"\ncolour = \"red\""),
                "line 6",
                "colour",
            ),
            (
                GOOD.replace("code = \"a\"", "code = \"A plan\""),
                "line 4",
                "a-z",
            ),
        ];
        for (text, line, why) in cases {
            let e = load("plans.toml", &text).unwrap_err().to_string();
            assert!(e.contains(line) && e.contains(why), "{e}");
        }
        let e = load("plans.json", "{\n\"plans\": [\n}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3"), "{e}");
        assert!(
            load("plans.toml", "plans = []")
                .unwrap_err()
                .to_string()
                .contains("no plans")
        );
    }

    #[test]
    fn the_defaults_pass_their_own_rules() {
        let d = Catalog::default();
        let text = toml::to_string(&serde_json::json!({
            "default": d.default_code,
            "plans": d.plans.iter().map(|p| serde_json::json!({
                "code": p.code, "name": p.name, "description": p.description,
                "monthly_price_cents": p.monthly_price_cents,
                "annual_price_cents": p.annual_price_cents, "limits": p.limits})).collect::<Vec<_>>(),
        }))
        .unwrap();
        let again = load("plans.toml", &text).unwrap();
        assert_eq!(again.plans, d.plans);
        assert_eq!(again.default_code, d.default_code);
    }
}
