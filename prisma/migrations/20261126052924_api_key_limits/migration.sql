-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "disabled" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "expires_at" TIMESTAMPTZ(3),
ADD COLUMN     "external_key_hash" BYTEA,
ADD COLUMN     "external_user" TEXT,
ADD COLUMN     "include_byok_in_limit" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "label" TEXT,
ADD COLUMN     "limit_micros" BIGINT,
ADD COLUMN     "limit_reset" TEXT,
ADD COLUMN     "name" TEXT NOT NULL DEFAULT '',
ADD COLUMN     "updated_at" TIMESTAMPTZ(3);

-- What the API accepts, held by the table too.
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_limit_reset_check" CHECK ("limit_reset" IN ('daily', 'weekly', 'monthly'));
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_limit_micros_check" CHECK ("limit_micros" >= 0);
