-- AlterTable
ALTER TABLE "accounts" ADD COLUMN     "vault_writes" BOOLEAN NOT NULL DEFAULT true;

-- AlterTable
ALTER TABLE "workspaces" ADD COLUMN     "vault_id" UUID;

-- AlterTable
ALTER TABLE "vault_secrets" ADD COLUMN     "system" BOOLEAN NOT NULL DEFAULT false;

-- Every secret stored before the vault API existed is Roster's own (an intern's runtime credential).
UPDATE "vault_secrets" SET "system" = true;

-- DropIndex
DROP INDEX "vault_secrets_vault_id_name_key";

-- CreateIndex
CREATE UNIQUE INDEX "vault_secrets_vault_id_system_name_key" ON "vault_secrets"("vault_id", "system", "name");

-- CreateIndex
CREATE UNIQUE INDEX "workspaces_vault_id_key" ON "workspaces"("vault_id");

-- AddForeignKey
ALTER TABLE "workspaces" ADD CONSTRAINT "workspaces_vault_id_fkey" FOREIGN KEY ("vault_id") REFERENCES "vaults"("id") ON DELETE SET NULL ON UPDATE CASCADE;
