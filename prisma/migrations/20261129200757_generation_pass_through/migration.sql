-- Whether a generation's reply went to its client as the provider sent it (pass-through, issue 60).
-- AlterTable
ALTER TABLE "generations" ADD COLUMN     "pass_through" BOOLEAN NOT NULL DEFAULT false;
