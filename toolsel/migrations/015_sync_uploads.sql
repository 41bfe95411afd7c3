-- Parts of syncs too large for one NATS message, staged until the whole arrives (toolsel/store/uploads.py).
CREATE TABLE IF NOT EXISTS sync_uploads (
    upload_id    uuid NOT NULL,
    part         integer NOT NULL,
    data         bytea NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (upload_id, part)
);
CREATE INDEX IF NOT EXISTS sync_uploads_received ON sync_uploads (received_at);
