//! Plans, subscriptions, invoices (issue 17; spec 2.12, 3, 4.4)

pub mod pix;
