-- CreateTable
CREATE TABLE "guardrails" (
    "id" UUID NOT NULL,
    "account_id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "is_default" BOOLEAN NOT NULL DEFAULT false,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "limit_micros" BIGINT,
    "reset_interval" TEXT,
    "include_byok_in_budgets" BOOLEAN NOT NULL DEFAULT false,
    "rules" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3),

    CONSTRAINT "guardrails_pkey" PRIMARY KEY ("id"),
    -- A spend limit has both its amount and its window, or neither.
    CONSTRAINT "guardrails_limit" CHECK (("limit_micros" IS NULL) = ("reset_interval" IS NULL) AND ("limit_micros" IS NULL OR "limit_micros" > 0)),
    CONSTRAINT "guardrails_reset_interval" CHECK ("reset_interval" IN ('daily', 'weekly', 'monthly'))
);

-- CreateTable
CREATE TABLE "guardrail_key_assignments" (
    "id" UUID NOT NULL,
    "guardrail_id" UUID NOT NULL,
    "key_id" UUID NOT NULL,
    "assigned_by" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "guardrail_key_assignments_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "guardrail_member_assignments" (
    "id" UUID NOT NULL,
    "guardrail_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "assigned_by" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "guardrail_member_assignments_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "guardrails_account_id_idx" ON "guardrails"("account_id");

-- CreateIndex
CREATE INDEX "guardrails_workspace_id_idx" ON "guardrails"("workspace_id");

-- One default guardrail per workspace.
CREATE UNIQUE INDEX "guardrails_one_default" ON "guardrails"("workspace_id") WHERE is_default;

-- CreateIndex
CREATE UNIQUE INDEX "guardrail_key_assignments_key_id_key" ON "guardrail_key_assignments"("key_id");

-- CreateIndex
CREATE INDEX "guardrail_key_assignments_guardrail_id_idx" ON "guardrail_key_assignments"("guardrail_id");

-- CreateIndex
CREATE INDEX "guardrail_member_assignments_user_id_idx" ON "guardrail_member_assignments"("user_id");

-- CreateIndex
CREATE UNIQUE INDEX "guardrail_member_assignments_guardrail_id_user_id_key" ON "guardrail_member_assignments"("guardrail_id", "user_id");

-- AddForeignKey
ALTER TABLE "guardrails" ADD CONSTRAINT "guardrails_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "guardrail_key_assignments" ADD CONSTRAINT "guardrail_key_assignments_guardrail_id_fkey" FOREIGN KEY ("guardrail_id") REFERENCES "guardrails"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "guardrail_key_assignments" ADD CONSTRAINT "guardrail_key_assignments_key_id_fkey" FOREIGN KEY ("key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "guardrail_member_assignments" ADD CONSTRAINT "guardrail_member_assignments_guardrail_id_fkey" FOREIGN KEY ("guardrail_id") REFERENCES "guardrails"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "guardrail_member_assignments" ADD CONSTRAINT "guardrail_member_assignments_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A member's spend in a workspace (what member guardrails bound), kept like a key's: its owner is
-- md5(workspace_id/user_id) as a uuid. Filled from the generations written before this migration.
INSERT INTO "spend" ("owner_id", "period", "credits_pico", "byok_pico")
SELECT md5(g.workspace_id::text || '/' || g.user_id::text)::uuid, p.period,
       sum(CASE WHEN g.is_byok THEN 0 ELSE g.cost_pico END),
       sum(CASE WHEN g.is_byok THEN g.cost_pico ELSE 0 END)
FROM "generations" g
CROSS JOIN LATERAL (VALUES
  ('all'),
  ('d' || to_char(g.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')),
  ('w' || to_char(date_trunc('week', g.created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')),
  ('m' || to_char(g.created_at AT TIME ZONE 'UTC', 'YYYY-MM'))) AS p(period)
WHERE g.user_id IS NOT NULL AND g.workspace_id IS NOT NULL
GROUP BY 1, p.period;
