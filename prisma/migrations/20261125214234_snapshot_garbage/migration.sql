-- CreateTable
CREATE TABLE "snapshot_garbage" (
    "key" TEXT NOT NULL,
    "added_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "snapshot_garbage_pkey" PRIMARY KEY ("key")
);

-- An S3 object no row points at any more is garbage: a snapshot replaced by another under a new
-- key, or a snapshot whose intern was deleted (the row goes with it). The API deletes the objects.
CREATE FUNCTION "workspace_snapshots_garbage"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.store = 's3' AND OLD.key IS NOT NULL AND (TG_OP = 'DELETE' OR NEW.key IS DISTINCT FROM OLD.key) THEN
    INSERT INTO "snapshot_garbage" ("key") VALUES (OLD.key) ON CONFLICT DO NOTHING;
  END IF;
  -- A key written again (the same workspace snapshotted again) is no longer garbage.
  IF TG_OP = 'UPDATE' AND NEW.key IS NOT NULL THEN
    DELETE FROM "snapshot_garbage" WHERE "key" = NEW.key;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "workspace_snapshots_garbage" AFTER UPDATE OR DELETE ON "workspace_snapshots"
  FOR EACH ROW EXECUTE FUNCTION "workspace_snapshots_garbage"();
