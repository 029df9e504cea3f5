-- AlterTable
ALTER TABLE "accounts" ADD COLUMN     "credits_micros" BIGINT;

-- AlterTable
ALTER TABLE "workspaces" ADD COLUMN     "io_logging" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "io_logging_sampling_rate" DOUBLE PRECISION NOT NULL DEFAULT 1;

-- The keys' spend becomes every owner's (keys, workspaces, accounts), kept, not dropped.
ALTER TABLE "key_spend" RENAME TO "spend";
ALTER TABLE "spend" RENAME COLUMN "key_id" TO "owner_id";
ALTER TABLE "spend" RENAME CONSTRAINT "key_spend_pkey" TO "spend_pkey";

-- Workspaces' and accounts' spend from the generations written before this migration.
INSERT INTO "spend" ("owner_id", "period", "credits_pico", "byok_pico")
SELECT o.owner_id, p.period,
       sum(CASE WHEN g.is_byok THEN 0 ELSE g.cost_pico END),
       sum(CASE WHEN g.is_byok THEN g.cost_pico ELSE 0 END)
FROM "generations" g
CROSS JOIN LATERAL (VALUES (g.workspace_id), (g.account_id)) AS o(owner_id)
CROSS JOIN LATERAL (VALUES
  ('all'),
  ('d' || to_char(g.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')),
  ('w' || to_char(date_trunc('week', g.created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')),
  ('m' || to_char(g.created_at AT TIME ZONE 'UTC', 'YYYY-MM'))) AS p(period)
WHERE o.owner_id IS NOT NULL
GROUP BY o.owner_id, p.period;

-- CreateTable
CREATE TABLE "generation_content" (
    "request_id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "input" JSONB NOT NULL,
    "output" JSONB NOT NULL,
    "error" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "generation_content_pkey" PRIMARY KEY ("request_id")
);
