-- The credits that bound one actor's reviews, as session_credits bound its outcomes: one actor (session, else
-- user, else selection) teaches a tool's usage memory by reviews at most learning_credits_per_actor times per
-- tenant. A table apart from session_credits, which a replay (`toolsel learner --rebuild`) empties and recomputes
-- from the outcomes alone: the usage memory these credits bound is not replayed, so they are kept.
CREATE TABLE IF NOT EXISTS review_credits (
    tenant_id  text NOT NULL,
    actor      text NOT NULL,
    tool_id    bigint NOT NULL REFERENCES tools (id) ON DELETE CASCADE,
    credits    integer NOT NULL DEFAULT 0,  -- reviews of this actor that taught this tool so far
    PRIMARY KEY (tenant_id, actor, tool_id)
);
