-- The operator signs in to the console too (its fleet page): such a session has no key or workspace.
-- AlterTable
ALTER TABLE "console_sessions" ALTER COLUMN "key_id" DROP NOT NULL,
ALTER COLUMN "workspace_id" DROP NOT NULL;
