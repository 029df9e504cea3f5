-- CreateTable
CREATE TABLE "byok_keys" (
    "id" UUID NOT NULL,
    "account_id" UUID NOT NULL,
    "workspace_id" UUID,
    "provider" TEXT NOT NULL,
    "name" TEXT,
    "sealed" BYTEA,
    "label" TEXT NOT NULL,
    "disabled" BOOLEAN NOT NULL DEFAULT false,
    "is_byok_only" BOOLEAN NOT NULL DEFAULT false,
    "is_fallback" BOOLEAN NOT NULL DEFAULT false,
    "is_required" BOOLEAN NOT NULL DEFAULT false,
    "declared_zdr" BOOLEAN,
    "sort_order" INTEGER NOT NULL DEFAULT 0,
    "allowed_api_key_hashes" JSONB,
    "allowed_models" JSONB,
    "allowed_user_ids" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3),
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "byok_keys_pkey" PRIMARY KEY ("id"),
    -- A fallback key waits for the shared one, which a BYOK-only key takes out.
    CONSTRAINT "byok_keys_fallback_not_only" CHECK (NOT ("is_fallback" AND "is_byok_only"))
);

-- CreateIndex
CREATE INDEX "byok_keys_account_id_provider_idx" ON "byok_keys"("account_id", "provider");

-- CreateIndex
CREATE INDEX "byok_keys_workspace_id_idx" ON "byok_keys"("workspace_id");

-- AddForeignKey
ALTER TABLE "byok_keys" ADD CONSTRAINT "byok_keys_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "byok_keys" ADD CONSTRAINT "byok_keys_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;
