-- AlterTable
ALTER TABLE "workspaces" ADD COLUMN     "created_by" UUID,
ADD COLUMN     "data_discount_logging" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "default_image_model" TEXT,
ADD COLUMN     "default_provider_sort" TEXT,
ADD COLUMN     "default_text_model" TEXT,
ADD COLUMN     "description" TEXT,
ADD COLUMN     "disabled_server_tools" JSONB,
ADD COLUMN     "include_byok_in_budgets" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "io_logging_api_key_ids" JSONB,
ADD COLUMN     "is_default" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "name" TEXT,
ADD COLUMN     "observability_broadcast" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "slug" TEXT,
ADD COLUMN     "updated_at" TIMESTAMPTZ(3);

-- Workspaces made before these columns: each account's first is its default workspace ("default"),
-- the others are named after their id.
WITH ranked AS (
  SELECT id, row_number() OVER (PARTITION BY account_id ORDER BY created_at, id) AS n FROM "workspaces")
UPDATE "workspaces" w
SET is_default = (r.n = 1),
    slug = CASE WHEN r.n = 1 THEN 'default' ELSE 'ws-' || left(w.id::text, 8) END,
    name = CASE WHEN r.n = 1 THEN 'Default' ELSE 'Workspace ' || left(w.id::text, 8) END
FROM ranked r WHERE r.id = w.id;
ALTER TABLE "workspaces" ALTER COLUMN "name" SET NOT NULL, ALTER COLUMN "slug" SET NOT NULL;
-- One default workspace per account.
CREATE UNIQUE INDEX "workspaces_one_default" ON "workspaces"("account_id") WHERE is_default;

-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "number" BIGSERIAL NOT NULL;

-- CreateTable
CREATE TABLE "workspace_budgets" (
    "id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "interval" TEXT NOT NULL,
    "limit_micros" BIGINT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workspace_budgets_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "workspace_budgets_interval" CHECK ("interval" IN ('daily', 'weekly', 'monthly', 'lifetime')),
    CONSTRAINT "workspace_budgets_limit" CHECK ("limit_micros" > 0)
);

-- CreateTable
CREATE TABLE "workspace_members" (
    "id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "role" TEXT NOT NULL DEFAULT 'member',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workspace_members_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "workspace_budgets_workspace_id_interval_key" ON "workspace_budgets"("workspace_id", "interval");

-- CreateIndex
CREATE INDEX "workspace_members_user_id_idx" ON "workspace_members"("user_id");

-- CreateIndex
CREATE UNIQUE INDEX "workspace_members_workspace_id_user_id_key" ON "workspace_members"("workspace_id", "user_id");

-- CreateIndex
CREATE UNIQUE INDEX "workspaces_account_id_slug_key" ON "workspaces"("account_id", "slug");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_number_key" ON "api_keys"("number");

-- AddForeignKey
ALTER TABLE "workspace_budgets" ADD CONSTRAINT "workspace_budgets_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "workspace_members" ADD CONSTRAINT "workspace_members_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "workspace_members" ADD CONSTRAINT "workspace_members_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;
