-- A job lease names its worker's beacon session: a dead worker's lease is taken at once (its session gone with it), a live one's honoured.
-- AlterTable
ALTER TABLE "job_leases" ADD COLUMN     "session_pid" INTEGER;
