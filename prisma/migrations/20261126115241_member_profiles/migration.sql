-- AlterTable
ALTER TABLE "users" ADD COLUMN     "email" TEXT,
ADD COLUMN     "first_name" TEXT,
ADD COLUMN     "last_name" TEXT,
ADD COLUMN     "role" TEXT NOT NULL DEFAULT 'org:member';

-- Each account's first member (the one `admin bootstrap` made) administers it.
UPDATE "users" u SET "role" = 'org:admin'
FROM (SELECT DISTINCT ON (w.account_id) u2.id FROM "users" u2 JOIN "workspaces" w ON w.id = u2.workspace_id
      ORDER BY w.account_id, u2.created_at, u2.id) first
WHERE u.id = first.id;
ALTER TABLE "users" ADD CONSTRAINT "users_role" CHECK ("role" IN ('org:admin', 'org:member'));
