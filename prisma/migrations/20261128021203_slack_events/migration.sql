-- CreateTable
CREATE TABLE "slack_events" (
    "event_id" TEXT NOT NULL,
    "intern_id" UUID NOT NULL,
    "team_id" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "thread_ts" TEXT NOT NULL,
    "user_id" TEXT NOT NULL,
    "text" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'received',
    "reply_ts" TEXT,
    "outcome" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "slack_events_pkey" PRIMARY KEY ("intern_id","event_id")
);

-- AddForeignKey
ALTER TABLE "slack_events" ADD CONSTRAINT "slack_events_intern_id_fkey" FOREIGN KEY ("intern_id") REFERENCES "slack_links"("intern_id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "slack_events" ADD CONSTRAINT "slack_events_state" CHECK ("state" IN ('received', 'running', 'done'));
