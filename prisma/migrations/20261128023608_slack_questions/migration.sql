-- AlterTable
ALTER TABLE "slack_links" ADD COLUMN     "approvers" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- CreateTable
CREATE TABLE "slack_questions" (
    "intern_id" UUID NOT NULL,
    "interaction_id" TEXT NOT NULL,
    "event_id" TEXT NOT NULL,
    "session_id" TEXT NOT NULL,
    "question" JSONB NOT NULL,
    "card_ts" TEXT,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "answer" TEXT,
    "answered_by" TEXT,
    "answered_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "slack_questions_pkey" PRIMARY KEY ("intern_id","interaction_id")
);

-- AddForeignKey
ALTER TABLE "slack_questions" ADD CONSTRAINT "slack_questions_intern_id_event_id_fkey" FOREIGN KEY ("intern_id", "event_id") REFERENCES "slack_events"("intern_id", "event_id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "slack_questions" ADD CONSTRAINT "slack_questions_state" CHECK ("state" IN ('pending', 'answered', 'expired'));
