-- CreateTable
CREATE TABLE "presets" (
    "id" UUID NOT NULL,
    "workspace_id" UUID NOT NULL,
    "slug" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "status" TEXT NOT NULL DEFAULT 'active',
    "status_updated_at" TIMESTAMPTZ(3),
    "creator_user_id" UUID,
    "designated_version_id" UUID,
    "latest_version" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "presets_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "preset_versions" (
    "id" UUID NOT NULL,
    "preset_id" UUID NOT NULL,
    "version" INTEGER NOT NULL,
    "config" JSONB NOT NULL,
    "system_prompt" TEXT,
    "creator_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "preset_versions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "presets_workspace_id_updated_at_id_idx" ON "presets"("workspace_id", "updated_at" DESC, "id");

-- CreateIndex
CREATE UNIQUE INDEX "presets_workspace_id_slug_key" ON "presets"("workspace_id", "slug");

-- CreateIndex
CREATE UNIQUE INDEX "preset_versions_preset_id_version_key" ON "preset_versions"("preset_id", "version");

-- AddForeignKey
ALTER TABLE "presets" ADD CONSTRAINT "presets_workspace_id_fkey" FOREIGN KEY ("workspace_id") REFERENCES "workspaces"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "preset_versions" ADD CONSTRAINT "preset_versions_preset_id_fkey" FOREIGN KEY ("preset_id") REFERENCES "presets"("id") ON DELETE CASCADE ON UPDATE CASCADE;
