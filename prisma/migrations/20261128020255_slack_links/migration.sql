-- CreateTable
CREATE TABLE "slack_links" (
    "intern_id" UUID NOT NULL,
    "origin" TEXT NOT NULL DEFAULT 'team',
    "state" TEXT NOT NULL DEFAULT 'awaiting_install',
    "reason" TEXT,
    "provision_on_install" BOOLEAN NOT NULL,
    "client_id" TEXT NOT NULL,
    "sealed" BYTEA NOT NULL,
    "install_nonce" TEXT,
    "app_id" TEXT,
    "team_id" TEXT,
    "team_name" TEXT,
    "bot_user_id" TEXT,
    "installer_id" TEXT,
    "installed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "slack_links_pkey" PRIMARY KEY ("intern_id")
);

-- AddForeignKey
ALTER TABLE "slack_links" ADD CONSTRAINT "slack_links_intern_id_fkey" FOREIGN KEY ("intern_id") REFERENCES "interns"("id") ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE "slack_links" ADD CONSTRAINT "slack_links_state" CHECK ("state" IN ('awaiting_install', 'installed', 'revoked'));
ALTER TABLE "slack_links" ADD CONSTRAINT "slack_links_origin" CHECK ("origin" IN ('team', 'minted'));
