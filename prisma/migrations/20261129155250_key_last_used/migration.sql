-- When a key last authenticated a request (to the minute), for the keys page.
-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "last_used_at" TIMESTAMPTZ(3);
