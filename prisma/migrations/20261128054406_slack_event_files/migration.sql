-- AlterTable
ALTER TABLE "slack_events" ADD COLUMN     "files" JSONB NOT NULL DEFAULT '[]';
