-- A tool quarantined again straight from probation (still failing when retried) waits twice as long before its
-- next retry: `strikes` counts those quarantines in a row (1 for a first quarantine).
ALTER TABLE tool_quarantine ADD COLUMN IF NOT EXISTS strikes integer NOT NULL DEFAULT 1;
