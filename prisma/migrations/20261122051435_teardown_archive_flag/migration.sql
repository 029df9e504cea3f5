-- AlterTable
ALTER TABLE "interns" ADD COLUMN     "workspace_archive_failed" BOOLEAN NOT NULL DEFAULT false;
