-- Organizations and stores (issue 4): organization settings. Store roles and tenant roles
-- already exist (V1); permissions are derived from roles in code (http::permissions).

ALTER TABLE tenants ADD COLUMN currency TEXT NOT NULL DEFAULT 'BRL';
ALTER TABLE tenants ADD COLUMN timezone TEXT NOT NULL DEFAULT 'America/Sao_Paulo';
ALTER TABLE tenants ADD COLUMN locale TEXT NOT NULL DEFAULT 'pt-BR'
    CHECK (locale IN ('pt-BR', 'en-US'));
ALTER TABLE tenants ADD COLUMN plan_code TEXT;

-- "The caller's organizations, newest first" and "the caller's stores" pages.
CREATE INDEX tenants_by_age ON tenants (created_at, id);
CREATE INDEX stores_by_tenant ON stores (tenant_id, created_at, id);
