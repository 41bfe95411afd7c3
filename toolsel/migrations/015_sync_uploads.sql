-- Parts of syncs too large for one NATS message, staged per sender (its scope) until the whole arrives
-- (toolsel/store/uploads.py).
CREATE TABLE IF NOT EXISTS sync_uploads (
    sender       text NOT NULL,
    upload_id    uuid NOT NULL,
    part         integer NOT NULL,
    data         bytea NOT NULL,
    received_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (sender, upload_id, part)
);
CREATE INDEX IF NOT EXISTS sync_uploads_received ON sync_uploads (received_at);
