-- Single sign-on to the console (members disabled, the key a member's sessions act as) and the audit log of governance changes.
-- AlterTable
ALTER TABLE "users" ADD COLUMN     "disabled_at" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "console" BOOLEAN NOT NULL DEFAULT false;

-- AlterTable
ALTER TABLE "console_sessions" ADD COLUMN     "user_id" UUID;

-- CreateTable
CREATE TABLE "audit_events" (
    "id" UUID NOT NULL,
    "account_id" UUID NOT NULL,
    "actor_type" TEXT NOT NULL,
    "actor_id" TEXT,
    "actor_label" TEXT NOT NULL,
    "via" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target_type" TEXT NOT NULL,
    "target_id" TEXT,
    "before" JSONB,
    "after" JSONB,
    "request" JSONB,
    "ip" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "audit_events_account_id_created_at_id_idx" ON "audit_events"("account_id", "created_at" DESC, "id");

-- CreateIndex
CREATE INDEX "audit_events_created_at_idx" ON "audit_events"("created_at");

-- CreateIndex
CREATE INDEX "console_sessions_user_id_idx" ON "console_sessions"("user_id");

-- The audit log is never edited: an UPDATE is refused whoever asks (rows leave only by retention).
CREATE FUNCTION audit_events_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_events rows are never changed';
END
$$;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON "audit_events"
  FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_update();
