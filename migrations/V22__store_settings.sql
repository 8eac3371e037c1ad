-- Store settings the onboarding checklist reads (issue 17), set with PATCH /stores/{id}.
-- Payments, freight and domains have no area of their own yet: these settings are what
-- the merchant declares, validated by the tenants area.

-- JSON array of payment method codes ("pix", "credit_card", ...), no duplicates.
ALTER TABLE stores ADD COLUMN payment_methods TEXT NOT NULL DEFAULT '[]';
-- JSON array of {name, regions [UF codes], price_cents, free_over_cents}.
ALTER TABLE stores ADD COLUMN shipping_zones TEXT NOT NULL DEFAULT '[]';
-- A lowercase host name such as shop.example.com.br; at most one store per domain.
ALTER TABLE stores ADD COLUMN custom_domain TEXT;
CREATE UNIQUE INDEX stores_by_custom_domain ON stores (custom_domain)
    WHERE custom_domain IS NOT NULL;

-- When each setting last went from unset to set (null while unset): the checklist's
-- `done_at`. Changing a set value keeps it; clearing it resets it.
ALTER TABLE stores ADD COLUMN payment_methods_set_at TEXT;
ALTER TABLE stores ADD COLUMN shipping_zones_set_at TEXT;
ALTER TABLE stores ADD COLUMN custom_domain_set_at TEXT;

-- When the merchant last saved the store's brand system. Nothing sets it yet: the brand
-- area (issue 18) will, on a merchant's save, restore or approved generation (not for the
-- default system a new store starts with), so the checklist's `brand` step stays undone
-- until that area exists.
ALTER TABLE stores ADD COLUMN brand_updated_at TEXT;
