//! Analytics DTOs.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::ids::ProductId;

/// How a summary's series is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Interval {
    Day,
    /// ISO weeks, Monday to Sunday.
    Week,
    Month,
}

/// The range of a report: store-local calendar dates, both included.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SummaryQuery {
    /// First day (`YYYY-MM-DD`, a year from 1970 to 9998, the store's time zone); default 29
    /// days before `to`.
    #[param(format = Date, pattern = r"^(19[7-9][0-9]|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-[0-9]{2}-[0-9]{2}$")]
    pub from: Option<String>,
    /// Last day, included (`YYYY-MM-DD`, a year from 1970 to 9998); default today in the
    /// store's time zone. At most 366 days from `from`.
    #[param(format = Date, pattern = r"^(19[7-9][0-9]|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-[0-9]{2}-[0-9]{2}$")]
    pub to: Option<String>,
    /// `day` (default), `week` (ISO, from Monday) or `month`.
    #[param(value_type = Option<Interval>, inline)]
    pub interval: Option<String>,
}

/// The range of the top-products list (the paging parameters beside it).
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TopProductsQuery {
    /// First day (`YYYY-MM-DD`, a year from 1970 to 9998, the store's time zone); default 29
    /// days before `to`.
    #[param(format = Date, pattern = r"^(19[7-9][0-9]|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-[0-9]{2}-[0-9]{2}$")]
    pub from: Option<String>,
    /// Last day, included (a year from 1970 to 9998); default today. At most 366 days from
    /// `from`.
    #[param(format = Date, pattern = r"^(19[7-9][0-9]|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-[0-9]{2}-[0-9]{2}$")]
    pub to: Option<String>,
}

/// The figures of a period (or of the whole range).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Totals {
    /// Orders created in the period that have been paid (cancelled-before-payment and
    /// still-unpaid orders do not count).
    pub orders: i64,
    /// The counted orders' totals (lines, shipping, less discounts).
    pub revenue_cents: i64,
    /// Refunds that succeeded, by the time each refund was asked for.
    pub refunds_cents: i64,
    /// `revenue_cents / orders`, rounded half up; 0 without orders.
    pub average_order_cents: i64,
    /// Customers created in the period (and not deleted since).
    pub new_customers: i64,
}

/// One period of the series.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SeriesPoint {
    /// The period's first day inside the range (`YYYY-MM-DD`): the first period starts at
    /// `from`, the others on a Monday or the 1st of a month; the last ends at `to`.
    pub start: String,
    pub orders: i64,
    pub revenue_cents: i64,
    pub refunds_cents: i64,
    pub average_order_cents: i64,
    pub new_customers: i64,
}

/// `GET .../analytics/summary`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SummaryOut {
    pub from: String,
    pub to: String,
    pub interval: Interval,
    pub currency: String,
    /// The store's time zone, in which the days are cut.
    pub timezone: String,
    pub totals: Totals,
    /// Every period of the range, empty ones with zeros.
    pub series: Vec<SeriesPoint>,
}

/// A product's sales in the range: the lines of the counted orders.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TopProductOut {
    pub product_id: ProductId,
    /// The product's current title, or the title it last sold under when deleted.
    pub title: String,
    pub quantity: i64,
    /// The lines' totals (before order discounts and shipping; refunds not taken off).
    pub revenue_cents: i64,
}
