-- AlterTable
ALTER TABLE "slack_events" ADD COLUMN     "post_begun_at" TIMESTAMPTZ(3),
ADD COLUMN     "reply_text" TEXT;

-- CreateTable
CREATE TABLE "slack_config_tokens" (
    "workspace_id" UUID NOT NULL,
    "team_id" TEXT NOT NULL,
    "sealed" BYTEA NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "rotated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "slack_config_tokens_pkey" PRIMARY KEY ("workspace_id")
);

-- CreateIndex
CREATE INDEX "slack_events_intern_id_channel_thread_ts_created_at_idx" ON "slack_events"("intern_id", "channel", "thread_ts", "created_at");

-- AddForeignKey
ALTER TABLE "slack_config_tokens" ADD CONSTRAINT "slack_config_tokens_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A turn whose reply waits to be posted (Slack away) is answered, not done.
ALTER TABLE "slack_events" DROP CONSTRAINT "slack_events_state";
ALTER TABLE "slack_events" ADD CONSTRAINT "slack_events_state" CHECK ("state" IN ('received', 'running', 'answered', 'done'));
