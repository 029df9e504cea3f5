-- CreateTable
CREATE TABLE "observability_destinations" (
    "id" UUID NOT NULL,
    "account_id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "type" TEXT NOT NULL,
    "name" TEXT,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "privacy_mode" BOOLEAN NOT NULL DEFAULT false,
    "broadcast_generation_cost" BOOLEAN NOT NULL DEFAULT false,
    "broadcast_generation_identity" BOOLEAN NOT NULL DEFAULT false,
    "broadcast_generation_request_context" BOOLEAN NOT NULL DEFAULT false,
    "api_key_hashes" JSONB,
    "api_key_ids" JSONB,
    "regions" JSONB NOT NULL DEFAULT '["global"]',
    "sampling_rate" DOUBLE PRECISION NOT NULL DEFAULT 1,
    "filter_rules" JSONB,
    "config" BYTEA,
    "failures" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,
    "last_delivered_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "observability_destinations_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "observability_destinations_account_id_idx" ON "observability_destinations"("account_id");

-- AddForeignKey
ALTER TABLE "observability_destinations" ADD CONSTRAINT "observability_destinations_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;
