-- AlterTable
ALTER TABLE "users" ADD COLUMN     "intern_count" INTEGER NOT NULL DEFAULT 0;

-- Existing interns count towards their creators' quota.
UPDATE "users" u SET "intern_count" = c.n
FROM (SELECT "creator_user_id" AS id, count(*)::int AS n FROM "interns" WHERE "creator_user_id" IS NOT NULL GROUP BY 1) c
WHERE u."id" = c.id;

-- Lets a single SQL statement refuse with one of our reasons: raises SQLSTATE RS409 whose message is
-- the reason, which the application maps onto its error catalogue.
CREATE FUNCTION "roster_refuse"(reason text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'RS409', MESSAGE = reason;
END $$;
