-- CreateTable
CREATE TABLE "generation_rollups" (
    "account_id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "key_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "model" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "hour" TIMESTAMPTZ(3) NOT NULL,
    "requests" BIGINT NOT NULL DEFAULT 0,
    "tokens_prompt" BIGINT NOT NULL DEFAULT 0,
    "tokens_completion" BIGINT NOT NULL DEFAULT 0,
    "tokens_reasoning" BIGINT NOT NULL DEFAULT 0,
    "tokens_cached" BIGINT NOT NULL DEFAULT 0,
    "credits_pico" DECIMAL(38,0) NOT NULL DEFAULT 0,
    "byok_pico" DECIMAL(38,0) NOT NULL DEFAULT 0,
    "latency_ms" BIGINT NOT NULL DEFAULT 0,
    "ttft_ms" BIGINT NOT NULL DEFAULT 0,
    "ttft_count" BIGINT NOT NULL DEFAULT 0,
    "cancelled" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "generation_rollups_pkey" PRIMARY KEY ("account_id","hour","workspace_id","key_id","user_id","model","provider")
);

-- The generations written before this migration, rolled up the way insertGenerations rolls new ones.
INSERT INTO "generation_rollups" ("account_id", "workspace_id", "key_id", "user_id", "model", "provider", "hour",
  "requests", "tokens_prompt", "tokens_completion", "tokens_reasoning", "tokens_cached", "credits_pico", "byok_pico",
  "latency_ms", "ttft_ms", "ttft_count", "cancelled")
SELECT g.account_id, coalesce(g.workspace_id, '00000000-0000-0000-0000-000000000000'),
       coalesce(g.key_id, '00000000-0000-0000-0000-000000000000'),
       coalesce(g.user_id, '00000000-0000-0000-0000-000000000000'), g.model, coalesce(g.provider, ''),
       date_trunc('hour', g.created_at), count(*), sum(g.tokens_prompt), sum(g.tokens_completion),
       sum(g.tokens_reasoning), sum(g.tokens_cached),
       sum(CASE WHEN g.is_byok THEN 0 ELSE g.cost_pico END), sum(CASE WHEN g.is_byok THEN g.cost_pico ELSE 0 END),
       sum(coalesce(g.latency_ms, 0)), sum(coalesce(g.ttft_ms, 0)), count(g.ttft_ms), count(*) FILTER (WHERE g.cancelled)
FROM "generations" g
WHERE g.account_id IS NOT NULL
GROUP BY 1, 2, 3, 4, 5, 6, 7;

-- The same sums per UTC day (what queries over whole days read).
CREATE TABLE "generation_rollups_daily" (
    "account_id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "key_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "model" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "day" TIMESTAMPTZ(3) NOT NULL,
    "requests" BIGINT NOT NULL DEFAULT 0,
    "tokens_prompt" BIGINT NOT NULL DEFAULT 0,
    "tokens_completion" BIGINT NOT NULL DEFAULT 0,
    "tokens_reasoning" BIGINT NOT NULL DEFAULT 0,
    "tokens_cached" BIGINT NOT NULL DEFAULT 0,
    "credits_pico" DECIMAL(38,0) NOT NULL DEFAULT 0,
    "byok_pico" DECIMAL(38,0) NOT NULL DEFAULT 0,
    "latency_ms" BIGINT NOT NULL DEFAULT 0,
    "ttft_ms" BIGINT NOT NULL DEFAULT 0,
    "ttft_count" BIGINT NOT NULL DEFAULT 0,
    "cancelled" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "generation_rollups_daily_pkey" PRIMARY KEY ("account_id","day","workspace_id","key_id","user_id","model","provider")
);

INSERT INTO "generation_rollups_daily" ("account_id", "workspace_id", "key_id", "user_id", "model", "provider", "day",
  "requests", "tokens_prompt", "tokens_completion", "tokens_reasoning", "tokens_cached", "credits_pico", "byok_pico",
  "latency_ms", "ttft_ms", "ttft_count", "cancelled")
SELECT "account_id", "workspace_id", "key_id", "user_id", "model", "provider",
       date_trunc('day', "hour" AT TIME ZONE 'UTC') AT TIME ZONE 'UTC', sum("requests"), sum("tokens_prompt"),
       sum("tokens_completion"), sum("tokens_reasoning"), sum("tokens_cached"), sum("credits_pico"), sum("byok_pico"),
       sum("latency_ms"), sum("ttft_ms"), sum("ttft_count"), sum("cancelled")
FROM "generation_rollups"
GROUP BY 1, 2, 3, 4, 5, 6, 7;

-- Queries filtered by one key or one workspace read only its rows.
CREATE INDEX "generation_rollups_account_id_key_id_hour_idx" ON "generation_rollups"("account_id", "key_id", "hour");
CREATE INDEX "generation_rollups_account_id_workspace_id_hour_idx" ON "generation_rollups"("account_id", "workspace_id", "hour");
CREATE INDEX "generation_rollups_daily_account_id_key_id_day_idx" ON "generation_rollups_daily"("account_id", "key_id", "day");
CREATE INDEX "generation_rollups_daily_account_id_workspace_id_day_idx" ON "generation_rollups_daily"("account_id", "workspace_id", "day");
