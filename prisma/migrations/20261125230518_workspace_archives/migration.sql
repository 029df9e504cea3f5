-- CreateTable
CREATE TABLE "workspace_archives" (
    "id" UUID NOT NULL,
    "intern_id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "configuration" JSONB NOT NULL,
    "sessions" JSONB NOT NULL,
    "store" TEXT,
    "bytes" BYTEA,
    "key" TEXT,
    "size" INTEGER,
    "sha256" TEXT,
    "archived_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workspace_archives_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "workspace_archives_workspace_id_archived_at_idx" ON "workspace_archives"("workspace_id", "archived_at");

-- CreateIndex
CREATE INDEX "workspace_archives_intern_id_idx" ON "workspace_archives"("intern_id");

-- CreateIndex
CREATE INDEX "workspace_archives_key_idx" ON "workspace_archives"("key");

-- An S3 object an archive holds is not garbage when its snapshot row goes (the archive is written
-- in the same transaction that deletes the intern, before the row goes with it).
CREATE OR REPLACE FUNCTION "workspace_snapshots_garbage"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.store = 's3' AND OLD.key IS NOT NULL AND (TG_OP = 'DELETE' OR NEW.key IS DISTINCT FROM OLD.key)
     AND NOT EXISTS (SELECT 1 FROM "workspace_archives" a WHERE a."key" = OLD.key) THEN
    INSERT INTO "snapshot_garbage" ("key") VALUES (OLD.key) ON CONFLICT DO NOTHING;
  END IF;
  -- A key written again (the same workspace snapshotted again) is no longer garbage.
  IF TG_OP = 'UPDATE' AND NEW.key IS NOT NULL THEN
    DELETE FROM "snapshot_garbage" WHERE "key" = NEW.key;
  END IF;
  RETURN NULL;
END $$;
