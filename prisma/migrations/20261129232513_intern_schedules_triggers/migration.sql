-- Interns that work without a person typing (issue 61): schedules, webhook triggers, and the turns they fire (each kept with its outcome).
-- CreateTable
CREATE TABLE "intern_schedules" (
    "id" UUID NOT NULL,
    "intern_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "cron" TEXT NOT NULL,
    "timezone" TEXT NOT NULL DEFAULT 'UTC',
    "prompt" TEXT NOT NULL,
    "session_id" TEXT,
    "approval_mode" TEXT NOT NULL DEFAULT 'manual',
    "missed" TEXT NOT NULL DEFAULT 'run_once',
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "last_fire_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "intern_schedules_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "intern_triggers" (
    "id" UUID NOT NULL,
    "intern_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "prompt" TEXT NOT NULL,
    "session_id" TEXT,
    "approval_mode" TEXT NOT NULL DEFAULT 'manual',
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "sealed_secret" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "intern_triggers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "intern_turns" (
    "id" UUID NOT NULL,
    "intern_id" UUID NOT NULL,
    "source" TEXT NOT NULL,
    "schedule_id" UUID,
    "trigger_id" UUID,
    "scheduled_for" TIMESTAMPTZ(3),
    "delivery_id" TEXT,
    "session_id" TEXT NOT NULL,
    "prompt" TEXT NOT NULL,
    "approval_mode" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'queued',
    "reason" TEXT,
    "interaction_id" TEXT,
    "output" TEXT,
    "usage" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "ended_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "intern_turns_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "intern_schedules_intern_id_name_key" ON "intern_schedules"("intern_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "intern_triggers_intern_id_name_key" ON "intern_triggers"("intern_id", "name");

-- CreateIndex
CREATE INDEX "intern_turns_intern_id_created_at_idx" ON "intern_turns"("intern_id", "created_at");

-- CreateIndex
CREATE INDEX "intern_turns_intern_id_state_idx" ON "intern_turns"("intern_id", "state");

-- CreateIndex
CREATE UNIQUE INDEX "intern_turns_schedule_id_scheduled_for_key" ON "intern_turns"("schedule_id", "scheduled_for");

-- CreateIndex
CREATE UNIQUE INDEX "intern_turns_trigger_id_delivery_id_key" ON "intern_turns"("trigger_id", "delivery_id");

-- AddForeignKey
ALTER TABLE "intern_schedules" ADD CONSTRAINT "intern_schedules_intern_id_fkey" FOREIGN KEY ("intern_id") REFERENCES "interns"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "intern_triggers" ADD CONSTRAINT "intern_triggers_intern_id_fkey" FOREIGN KEY ("intern_id") REFERENCES "interns"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "intern_turns" ADD CONSTRAINT "intern_turns_intern_id_fkey" FOREIGN KEY ("intern_id") REFERENCES "interns"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "intern_turns" ADD CONSTRAINT "intern_turns_schedule_id_fkey" FOREIGN KEY ("schedule_id") REFERENCES "intern_schedules"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "intern_turns" ADD CONSTRAINT "intern_turns_trigger_id_fkey" FOREIGN KEY ("trigger_id") REFERENCES "intern_triggers"("id") ON DELETE SET NULL ON UPDATE CASCADE;
