//! The webhook event catalog (spec 6.1): every [`Event`] the code emits, with what fires it,
//! generated from the enum, so it lists nothing that is never sent. Subscriptions name these;
//! an unknown name is refused.

use crate::events::Event;

/// Every event, in the catalog's order.
pub const EVENTS: &[Event] = Event::ALL;

pub fn description(name: &str) -> Option<&'static str> {
    Event::from_name(name).map(Event::description)
}
