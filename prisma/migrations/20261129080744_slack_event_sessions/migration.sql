-- A Slack turn names the session it runs in (a direct-message conversation is one, its threads too).
-- AlterTable
ALTER TABLE "slack_events" ADD COLUMN     "session_id" TEXT;
