-- AlterTable
ALTER TABLE "runtime_hosts" ADD COLUMN     "placed" INTEGER NOT NULL DEFAULT 0;

-- Each host's count of the interns that hold room on it (placed there, and queued, provisioning or
-- running), kept by this trigger whatever changes an intern's host or whether it holds room, so a
-- placement reads and checks one row (under its lock) instead of counting interns. It fires only
-- for such changes (its WHEN), not for the progress writes that make up most updates of interns. A
-- statement moving many interns at once may meet another doing so in the opposite order of hosts:
-- Postgres ends one of them (a deadlock), and the worker's batched writes then go one by one.
CREATE FUNCTION "interns_placed_count"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  was TEXT;
  now_on TEXT;
BEGIN
  IF TG_OP <> 'INSERT' AND OLD."runtime_host_id" IS NOT NULL AND OLD."status" IN ('queued', 'provisioning', 'running') THEN
    was := OLD."runtime_host_id";
  END IF;
  IF TG_OP <> 'DELETE' AND NEW."runtime_host_id" IS NOT NULL AND NEW."status" IN ('queued', 'provisioning', 'running') THEN
    now_on := NEW."runtime_host_id";
  END IF;
  IF was IS DISTINCT FROM now_on THEN
    IF was IS NOT NULL THEN UPDATE "runtime_hosts" SET "placed" = "placed" - 1 WHERE "id" = was; END IF;
    IF now_on IS NOT NULL THEN UPDATE "runtime_hosts" SET "placed" = "placed" + 1 WHERE "id" = now_on; END IF;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER "interns_placed_count_update" AFTER UPDATE OF "runtime_host_id", "status" ON "interns"
  FOR EACH ROW
  WHEN (OLD."runtime_host_id" IS DISTINCT FROM NEW."runtime_host_id"
        OR (OLD."status" IN ('queued', 'provisioning', 'running')) IS DISTINCT FROM (NEW."status" IN ('queued', 'provisioning', 'running')))
  EXECUTE FUNCTION "interns_placed_count"();
CREATE TRIGGER "interns_placed_count_delete" AFTER DELETE ON "interns"
  FOR EACH ROW WHEN (OLD."runtime_host_id" IS NOT NULL)
  EXECUTE FUNCTION "interns_placed_count"();

UPDATE "runtime_hosts" h SET "placed" = (
  SELECT count(*) FROM "interns" i WHERE i."runtime_host_id" = h."id" AND i."status" IN ('queued', 'provisioning', 'running'));

-- Places an intern for its provisioning run, in one statement (one round trip; the chosen host's
-- row locked only for it): on the host it is on if that one is live, fresh and has its room, else
-- on the fresh live host with the most free room (ties at random). The chosen host's row is locked
-- and its count read again under the lock (each statement here sees what committed before it), so
-- concurrent placements never overfill a host. No row: no host has room (or the run is stale).
-- With the host: the digest of the intern's latest workspace snapshot, or null.
CREATE FUNCTION "place_intern"(intern UUID, generation INT, fresh TIMESTAMPTZ)
  RETURNS TABLE ("host_id" TEXT, "address" TEXT, "epoch" INT, "snapshot" TEXT) LANGUAGE plpgsql AS $$
DECLARE
  me RECORD;
  candidate RECORD;
  chosen RECORD;
BEGIN
  -- Not locked: one run places an intern at a time (its job), and the update below is guarded by the generation.
  SELECT i."runtime_host_id", i."status", i."provision_generation" INTO me FROM "interns" i WHERE i."id" = intern;
  IF NOT FOUND OR me."provision_generation" <> generation THEN RETURN; END IF;
  FOR candidate IN
    SELECT h."id" FROM "runtime_hosts" h
    WHERE h."state" = 'live' AND h."heartbeat_at" > fresh
    ORDER BY (h."id" = me."runtime_host_id") IS TRUE DESC, h."capacity" - h."placed" DESC, random()
  LOOP
    -- Under the host's lock: its count is what every committed placement left. The intern's own
    -- place counts already if it holds room there.
    SELECT h."id", h."address", h."epoch" INTO chosen FROM "runtime_hosts" h
    WHERE h."id" = candidate."id" AND h."state" = 'live'
      AND h."placed" - (CASE WHEN h."id" = me."runtime_host_id" AND me."status" IN ('queued', 'provisioning', 'running') THEN 1 ELSE 0 END) < h."capacity"
    FOR UPDATE;
    IF FOUND THEN
      UPDATE "interns" SET "runtime_host_id" = chosen."id", "placement_generation" = generation WHERE "id" = intern AND "provision_generation" = generation;
      IF NOT FOUND THEN RETURN; END IF;
      host_id := chosen."id"; address := chosen."address"; epoch := chosen."epoch";
      -- The digest of its latest workspace snapshot (the host restores it first), or null.
      snapshot := (SELECT w."sha256" FROM "workspace_snapshots" w WHERE w."intern_id" = intern);
      RETURN NEXT;
      RETURN;
    END IF;
  END LOOP;
END $$;
