-- Standing work reports in Slack (issue 61): a schedule's or trigger's Slack conversation, and each turn's report message there (posted once, even when a post's answer was lost).
-- AlterTable
ALTER TABLE "intern_schedules" ADD COLUMN     "slack_channel" TEXT;

-- AlterTable
ALTER TABLE "intern_triggers" ADD COLUMN     "slack_channel" TEXT;

-- AlterTable
ALTER TABLE "intern_turns" ADD COLUMN     "slack_channel" TEXT,
ADD COLUMN     "slack_post_begun_at" TIMESTAMPTZ(3),
ADD COLUMN     "slack_report" TEXT,
ADD COLUMN     "slack_ts" TEXT;
