-- AlterTable
ALTER TABLE "outbox" ADD COLUMN     "trace_context" JSONB;
