-- toolsel schema: the registry, learning state and event history.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE IF NOT EXISTS tool_categories (
    plugin_id      text NOT NULL,
    name           text NOT NULL,
    parent         text,
    description    text NOT NULL DEFAULT '',
    workflow_hint  text NOT NULL DEFAULT '',
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (plugin_id, name)
);

CREATE TABLE IF NOT EXISTS tools (
    id                bigserial PRIMARY KEY,
    plugin_id         text NOT NULL,
    name              text NOT NULL,
    tenant_id         text NOT NULL DEFAULT '*',
    plugin_version    text NOT NULL DEFAULT '0.0.0',
    spec              jsonb NOT NULL,
    category          text,
    is_always_pinned  boolean NOT NULL DEFAULT false,
    pin_weight        integer NOT NULL DEFAULT 0,
    status            text NOT NULL DEFAULT 'active'
                      CHECK (status IN ('draft', 'active', 'deprecated', 'retired')),
    schema_version    text NOT NULL DEFAULT '1.0.0',
    content_hash      char(64) NOT NULL,
    embed_hash        char(64),
    embedding         vector(384),
    embedding_status  text NOT NULL DEFAULT 'pending'
                      CHECK (embedding_status IN ('pending', 'current', 'stale')),
    last_embedded_at  timestamptz,
    review_flag       boolean NOT NULL DEFAULT false,
    approved          boolean NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    deleted_at        timestamptz,
    UNIQUE (plugin_id, name)
);
CREATE INDEX IF NOT EXISTS tools_live ON tools (tenant_id) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS tools_embedding_hnsw ON tools USING hnsw (embedding vector_cosine_ops);

CREATE TABLE IF NOT EXISTS tool_page_mappings (
    plugin_id     text NOT NULL,
    page_pattern  text NOT NULL,
    category      text NOT NULL,
    priority      integer NOT NULL DEFAULT 0,
    PRIMARY KEY (plugin_id, page_pattern, category)
);

CREATE TABLE IF NOT EXISTS tool_visibility_rules (
    id          bigserial PRIMARY KEY,
    tenant_id   text NOT NULL DEFAULT '*',
    rule_type   text NOT NULL CHECK (rule_type IN ('org', 'user', 'page', 'role', 'tier', 'composite')),
    effect      text NOT NULL CHECK (effect IN ('allow', 'deny')),
    target_kind text NOT NULL CHECK (target_kind IN ('tool', 'category')),
    target      text NOT NULL,
    conditions  jsonb NOT NULL DEFAULT '{}'::jsonb,
    priority    integer NOT NULL DEFAULT 0,
    active      boolean NOT NULL DEFAULT true,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS tool_versions (
    tool_id         bigint NOT NULL REFERENCES tools (id),
    version         integer NOT NULL,
    snapshot        jsonb NOT NULL,
    changed_fields  text[] NOT NULL DEFAULT '{}',
    content_hash    char(64) NOT NULL,
    reason          text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tool_id, version)
);

CREATE TABLE IF NOT EXISTS tool_bandit_stats (
    tool_id      bigint NOT NULL REFERENCES tools (id),
    context_key  text NOT NULL,
    alpha        double precision NOT NULL,
    beta         double precision NOT NULL,
    selections   bigint NOT NULL DEFAULT 0,
    successes    bigint NOT NULL DEFAULT 0,
    failures     bigint NOT NULL DEFAULT 0,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tool_id, context_key)
);

CREATE TABLE IF NOT EXISTS tool_quality (
    tool_id               bigint PRIMARY KEY REFERENCES tools (id),
    calls                 bigint NOT NULL DEFAULT 0,
    successes             bigint NOT NULL DEFAULT 0,
    failures              bigint NOT NULL DEFAULT 0,
    rating_sum            double precision NOT NULL DEFAULT 0,
    rating_count          bigint NOT NULL DEFAULT 0,
    latency_sum_ms        double precision NOT NULL DEFAULT 0,
    latency_count         bigint NOT NULL DEFAULT 0,
    last_success_at       timestamptz,
    rolling_score         double precision,
    state                 text NOT NULL DEFAULT 'healthy',
    degraded_since        timestamptz,
    consecutive_degraded  integer NOT NULL DEFAULT 0,
    updated_at            timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS tool_quarantine (
    tool_id      bigint PRIMARY KEY REFERENCES tools (id),
    reason       text NOT NULL,
    since        timestamptz NOT NULL DEFAULT now(),
    released_at  timestamptz,
    released_by  text
);

CREATE TABLE IF NOT EXISTS selection_events (
    selection_id     uuid PRIMARY KEY,
    occurred_at      timestamptz NOT NULL,
    tenant_id        text NOT NULL,
    user_id          text,
    session_id       text,
    query            text NOT NULL,
    page             text NOT NULL DEFAULT '',
    tier             text NOT NULL,
    role             text,
    context_key      text NOT NULL,
    method           text NOT NULL,
    tools            jsonb NOT NULL,
    candidate_count  integer NOT NULL,
    latency_ms       double precision NOT NULL,
    tokens_selected  integer NOT NULL,
    tokens_catalog   integer NOT NULL
);
CREATE INDEX IF NOT EXISTS selection_events_time ON selection_events (occurred_at);

CREATE TABLE IF NOT EXISTS outcomes (
    event_id      uuid PRIMARY KEY,
    selection_id  uuid NOT NULL,
    occurred_at   timestamptz NOT NULL,
    calls         jsonb NOT NULL,
    applied_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS outcomes_selection ON outcomes (selection_id);

CREATE TABLE IF NOT EXISTS reviews (
    event_id       uuid PRIMARY KEY,
    selection_id   uuid NOT NULL,
    occurred_at    timestamptz NOT NULL,
    reviews        jsonb NOT NULL,
    none_of_these  boolean NOT NULL DEFAULT false,
    applied_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS review_log (
    id               bigserial PRIMARY KEY,
    event_id         uuid NOT NULL,
    tool_id          bigint NOT NULL REFERENCES tools (id),
    query_embedding  vector(384) NOT NULL,
    verdict          text NOT NULL,
    fitness          double precision NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS review_index (
    id        bigserial PRIMARY KEY,
    tool_id   bigint NOT NULL REFERENCES tools (id),
    centroid  vector(384) NOT NULL,
    fitness   double precision NOT NULL,
    reviews   integer NOT NULL
);

CREATE TABLE IF NOT EXISTS tool_feedback (
    event_id     uuid PRIMARY KEY,
    tool_id      bigint NOT NULL REFERENCES tools (id),
    tenant_id    text NOT NULL,
    rating       double precision NOT NULL,
    comment      text NOT NULL DEFAULT '',
    author       text,
    occurred_at  timestamptz NOT NULL
);

CREATE TABLE IF NOT EXISTS dead_letters (
    id          bigserial PRIMARY KEY,
    subject     text NOT NULL,
    reason      text NOT NULL,
    payload     bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
