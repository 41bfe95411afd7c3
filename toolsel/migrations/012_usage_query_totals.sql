-- The sum and count of the queries each scope's reviews ranked: their mean is the direction every query of the
-- scope shares (a tenant's requests all look alike in part), which the learner's listwise step leaves out of the
-- residuals, so that pushing a tool away from one query does not push it away from every query.
CREATE TABLE IF NOT EXISTS usage_query_totals (
    scope    text PRIMARY KEY,
    total    vector(384) NOT NULL,
    queries  bigint NOT NULL
);
