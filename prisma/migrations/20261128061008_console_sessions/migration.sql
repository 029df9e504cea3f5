-- CreateTable
CREATE TABLE "console_sessions" (
    "id_hash" BYTEA NOT NULL,
    "key_hash" BYTEA NOT NULL,
    "key_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "workspace_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "console_sessions_pkey" PRIMARY KEY ("id_hash")
);

-- CreateIndex
CREATE INDEX "console_sessions_expires_at_idx" ON "console_sessions"("expires_at");
