//! Every event the service can emit (spec 6.1), with what fires it. Subscriptions name these;
//! an unknown name is refused.

/// (name, description). Add a line here when domain code starts emitting a new event.
pub const EVENTS: &[(&str, &str)] = &[
    (
        "orders.created",
        "A new order is committed (payment intent issued).",
    ),
    (
        "orders.paid",
        "The payment provider confirmed an order's payment.",
    ),
    ("orders.fulfilled", "An order was fulfilled."),
    ("orders.shipped", "An order was shipped."),
    ("orders.delivered", "An order was delivered."),
    ("orders.cancelled", "An order was cancelled."),
    (
        "orders.refunded",
        "A full refund of an order cleared the provider.",
    ),
    ("orders.updated", "Any other change to an order."),
    ("products.created", "A product was created."),
    (
        "products.updated",
        "A product changed, including its media.",
    ),
    ("products.deleted", "A product was deleted."),
    (
        "inventory.low_stock",
        "A stock level fell below its low-stock threshold.",
    ),
    (
        "inventory.back_in_stock",
        "A stock level rose back above zero.",
    ),
    ("customers.created", "A customer record was created."),
    ("customers.updated", "A customer record changed."),
    ("customers.deleted", "A customer record was deleted."),
    ("carts.abandoned", "A cart was left without checking out."),
    ("carts.recovered", "An abandoned cart was checked out."),
    (
        "user.created",
        "An account was registered (platform webhook only; no store).",
    ),
    (
        "webhook.test",
        "Sent by POST .../webhooks/{id}/test to that webhook only.",
    ),
];

pub fn contains(name: &str) -> bool {
    EVENTS.iter().any(|(n, _)| *n == name)
}

pub fn description(name: &str) -> Option<&'static str> {
    EVENTS.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}
