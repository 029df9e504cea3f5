-- AlterTable
ALTER TABLE "generations" ADD COLUMN     "tokens_counted_by" TEXT NOT NULL DEFAULT 'provider';
ALTER TABLE "generations" ADD CONSTRAINT "generations_tokens_counted_by" CHECK ("tokens_counted_by" IN ('provider', 'roster'));
