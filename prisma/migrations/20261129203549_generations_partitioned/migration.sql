-- The generations partitioned by UTC day of created_at (issue 60): a busy gateway writes millions a
-- day, and a day past GENERATION_RETENTION_DAYS is dropped whole by the worker
-- (packages/shared/src/repositories/generations/partitions.ts), never deleted row by row. Prisma does
-- not describe partitions: this migration is written by hand. The table as it was becomes the first
-- partition (attached, not copied: no row moves), holding everything up to the end of the day after
-- this migration; the worker makes the days after that ahead of time, and a write that finds its day
-- missing makes it. The key holds the partition key, as Postgres requires of a partitioned table.
-- Attaching reads the old table once (its rows checked against the range, its new key's index built).

ALTER TABLE "generations" RENAME TO "generations_history";
-- Its key becomes the partitioned table's (id and created_at), made as it is attached.
ALTER TABLE "generations_history" DROP CONSTRAINT "generations_pkey";
ALTER INDEX "generations_key_id_created_at_idx" RENAME TO "generations_history_key_id_created_at_idx";
ALTER INDEX "generations_account_id_created_at_idx" RENAME TO "generations_history_account_id_created_at_idx";

CREATE TABLE "generations" (LIKE "generations_history" INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
  PARTITION BY RANGE ("created_at");
ALTER TABLE "generations" ADD CONSTRAINT "generations_pkey" PRIMARY KEY ("id", "created_at");
CREATE INDEX "generations_key_id_created_at_idx" ON "generations"("key_id", "created_at");
CREATE INDEX "generations_account_id_created_at_idx" ON "generations"("account_id", "created_at");

DO $$
DECLARE
  -- The end of the day after this one, or of the latest row's day if a clock ahead wrote later ones.
  upto timestamptz := greatest(
    (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '2 days') AT TIME ZONE 'UTC',
    (SELECT (date_trunc('day', max(created_at) AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC'
     FROM generations_history));
BEGIN
  EXECUTE format('ALTER TABLE generations ATTACH PARTITION generations_history FOR VALUES FROM (MINVALUE) TO (%L)', upto);
END $$;
