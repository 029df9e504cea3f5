-- DropForeignKey
ALTER TABLE "vaults" DROP CONSTRAINT "vaults_master_key_id_fkey";

-- DropIndex
DROP INDEX "interns_creator_user_id_idx";

-- DropIndex
DROP INDEX "idempotency_records_created_at_idx";

-- CreateIndex
CREATE INDEX "idempotency_records_created_at_idx" ON "idempotency_records" USING BRIN ("created_at");
