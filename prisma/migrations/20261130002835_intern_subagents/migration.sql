-- Subagents (issue 61): a turn an intern's own turn starts, in a session of its own, with its model and budget; its end told in the session that started it.
-- AlterTable
ALTER TABLE "intern_turns" ADD COLUMN     "budget_usd" DOUBLE PRECISION,
ADD COLUMN     "model" TEXT,
ADD COLUMN     "parent_session_id" TEXT;
