//! Permissions (spec 5 rule 10; issue 4): the codes, the built-in roles, and the set a
//! caller holds. One table below defines every code; `GET /permissions/catalog` serves it.

use serde::Serialize;
use utoipa::ToSchema;

macro_rules! permissions {
    ($($variant:ident = $code:literal, $area:literal, $desc:literal;)*) => {
        /// A permission code such as `orders.read`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Permission { $($variant),* }

        impl Permission {
            pub const ALL: &'static [Permission] = &[$(Permission::$variant),*];

            pub fn code(self) -> &'static str {
                match self { $(Permission::$variant => $code),* }
            }

            pub fn area(self) -> &'static str {
                match self { $(Permission::$variant => $area),* }
            }

            pub fn description(self) -> &'static str {
                match self { $(Permission::$variant => $desc),* }
            }
        }
    };
}

permissions! {
    TenantsEdit = "tenants.edit", "organizations", "Change the organization's name, time zone and language";
    StoresCreate = "stores.create", "organizations", "Create stores in the organization";
    StoresEdit = "stores.edit", "stores", "Change the store's settings";
    StoresDelete = "stores.delete", "stores", "Delete the store";
    MembersRead = "members.read", "members", "See the store's members and invites";
    MembersWrite = "members.write", "members", "Invite, change and remove members";
    ApiTokensRead = "api_tokens.read", "api_tokens", "See the store's API tokens";
    ApiTokensWrite = "api_tokens.write", "api_tokens", "Create, rotate and revoke API tokens";
    ProductsRead = "products.read", "catalog", "See products";
    ProductsWrite = "products.write", "catalog", "Create, change and delete products";
    CategoriesWrite = "categories.write", "catalog", "Create, change and delete categories";
    CustomersRead = "customers.read", "customers", "See customers";
    CustomersWrite = "customers.write", "customers", "Create, change and delete customers";
    OrdersRead = "orders.read", "orders", "See orders";
    OrdersWrite = "orders.write", "orders", "Create orders and change their status";
    OrdersRefund = "orders.refund", "orders", "Refund payments";
    InventoryRead = "inventory.read", "inventory", "See stock levels";
    InventoryWrite = "inventory.write", "inventory", "Adjust stock";
    ReviewsRead = "reviews.read", "reviews", "See reviews";
    ReviewsWrite = "reviews.write", "reviews", "Moderate and import reviews";
    ConversationsRead = "conversations.read", "inbox", "See conversations and the realtime inbox";
    ConversationsWrite = "conversations.write", "inbox", "Reply to and manage conversations";
    WebhooksRead = "webhooks.read", "webhooks", "See webhooks, their events and deliveries";
    WebhooksWrite = "webhooks.write", "webhooks", "Create webhooks and subscribe them to events";
    WebhooksEdit = "webhooks.edit", "webhooks", "Change webhooks";
    WebhooksDelete = "webhooks.delete", "webhooks", "Delete webhooks and unsubscribe events";
    CmsRead = "cms.read", "cms", "See storefront pages and content";
    CmsWrite = "cms.write", "cms", "Change storefront pages and content";
    MarketingRead = "marketing.read", "marketing", "See marketing e-mail, ads and analytics";
    MarketingWrite = "marketing.write", "marketing", "Run marketing e-mail and ads";
    WorkflowsRead = "workflows.read", "workflows", "See workflows";
    WorkflowsWrite = "workflows.write", "workflows", "Change, publish and restore workflows";
    BrandRead = "brand.read", "brand", "See the brand system";
    BrandWrite = "brand.write", "brand", "Change and restore the brand system";
    AssistantUse = "assistant.use", "assistant", "Chat with the assistant";
    BillingRead = "billing.read", "billing", "See the plan, subscription and invoices";
    BillingWrite = "billing.write", "billing", "Change the plan and pay invoices";
    AuditRead = "audit.read", "audit", "See the audit trail";
}

impl Permission {
    pub fn parse(code: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|p| p.code() == code)
    }

    pub fn is_read(self) -> bool {
        self.code().ends_with(".read")
    }

    fn bit(self) -> u64 {
        1 << (self as u32)
    }
}

/// A set of permissions (a bitset: the catalog has fewer than 64 codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PermissionSet(u64);

impl PermissionSet {
    /// A token's scopes: its permission codes, or `*` for all. A code this version does not
    /// know grants nothing.
    pub fn from_scopes(codes: &[String]) -> Self {
        if codes.iter().any(|c| c == "*") {
            return Self::all();
        }
        Self::of(codes.iter().filter_map(|c| Permission::parse(c)))
    }

    pub fn all() -> Self {
        Self::of(Permission::ALL.iter().copied())
    }

    pub fn of(perms: impl IntoIterator<Item = Permission>) -> Self {
        Self(perms.into_iter().fold(0, |acc, p| acc | p.bit()))
    }

    pub fn contains(self, p: Permission) -> bool {
        self.0 & p.bit() != 0
    }

    /// Every permission of `other` is in this set.
    pub fn contains_all(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    #[must_use]
    pub fn intersect(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }

    pub fn iter(self) -> impl Iterator<Item = Permission> {
        Permission::ALL
            .iter()
            .copied()
            .filter(move |p| self.contains(*p))
    }
}

/// The built-in store roles (issue 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Everything.
    Owner,
    /// Everything but billing.write and deleting the store.
    Admin,
    /// Reads, plus product, order, customer, inventory and conversation writes.
    Staff,
    /// Reads.
    Viewer,
}

impl Role {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "owner" => Some(Role::Owner),
            "admin" => Some(Role::Admin),
            "staff" => Some(Role::Staff),
            "viewer" => Some(Role::Viewer),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Staff => "staff",
            Role::Viewer => "viewer",
        }
    }

    pub fn permissions(self) -> PermissionSet {
        use Permission as P;
        let reads = Permission::ALL.iter().copied().filter(|p| p.is_read());
        match self {
            Role::Owner => PermissionSet::all(),
            Role::Admin => PermissionSet::of(
                Permission::ALL
                    .iter()
                    .copied()
                    .filter(|p| !matches!(p, P::BillingWrite | P::StoresDelete)),
            ),
            Role::Staff => PermissionSet::of(reads.chain([
                P::ProductsWrite,
                P::OrdersWrite,
                P::CustomersWrite,
                P::InventoryWrite,
                P::ConversationsWrite,
            ])),
            Role::Viewer => PermissionSet::of(reads),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_roles_nest() {
        let mut codes: Vec<_> = Permission::ALL.iter().map(|p| p.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), Permission::ALL.len());
        assert!(Permission::ALL.len() < 64, "fits the bitset");
        let (o, a, s, v) = (
            Role::Owner.permissions(),
            Role::Admin.permissions(),
            Role::Staff.permissions(),
            Role::Viewer.permissions(),
        );
        for p in Permission::ALL.iter().copied() {
            assert!(o.contains(p));
            if v.contains(p) {
                assert!(s.contains(p) && a.contains(p), "{}", p.code());
            }
            if s.contains(p) {
                assert!(a.contains(p), "{}", p.code());
            }
        }
        assert!(!a.contains(Permission::BillingWrite) && !a.contains(Permission::StoresDelete));
        assert!(s.contains(Permission::OrdersWrite) && !s.contains(Permission::OrdersRefund));
        assert!(v.contains(Permission::AuditRead) && !v.contains(Permission::ProductsWrite));
        assert_eq!(
            Permission::parse("orders.read"),
            Some(Permission::OrdersRead)
        );
    }
}
