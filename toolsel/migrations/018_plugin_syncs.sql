-- The last sync applied for each plugin and tenant (toolsel/store/registry.py): a sync delivered again is not
-- applied twice, and one made before it (redelivered after a newer one) does not revert the registry.
CREATE TABLE IF NOT EXISTS plugin_syncs (
    plugin_id    text NOT NULL,
    tenant_id    text NOT NULL,
    event_id     uuid NOT NULL,
    occurred_at  timestamptz NOT NULL,
    applied_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (plugin_id, tenant_id)
);
