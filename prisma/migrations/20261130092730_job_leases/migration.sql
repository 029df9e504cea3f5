-- A job's run holds a lease while it goes, so a run of the same job BullMQ started again (its worker late renewing the lock, not dead) waits for it instead of running alongside.
-- CreateTable
CREATE TABLE "job_leases" (
    "job_id" TEXT NOT NULL,
    "holder" TEXT NOT NULL,
    "held_until" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "job_leases_pkey" PRIMARY KEY ("job_id")
);
