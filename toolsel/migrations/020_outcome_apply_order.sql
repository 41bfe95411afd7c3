-- The order outcome batches were applied in, for a rebuild to replay them in it (toolsel/store/events.py): applied_at
-- is when a batch's transaction began, but of two batches on the same tools the one that took their locks first
-- applied first, and a replay in the other order counted other calls within an actor's credits (and moved a
-- posterior in another order). A batch takes its number once it holds every lock it writes under; outcomes stored
-- before this have none and were applied before every numbered one.
CREATE SEQUENCE IF NOT EXISTS outcome_apply_order;
ALTER TABLE outcomes ADD COLUMN IF NOT EXISTS applied_order bigint;
