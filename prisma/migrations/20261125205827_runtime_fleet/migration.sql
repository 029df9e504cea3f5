-- AlterTable
ALTER TABLE "interns" ADD COLUMN     "moved_at" TIMESTAMPTZ(3),
ADD COLUMN     "placement_generation" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "runtime_host_id" TEXT;

-- CreateTable
CREATE TABLE "runtime_hosts" (
    "id" TEXT NOT NULL,
    "address" TEXT NOT NULL,
    "capacity" INTEGER NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'live',
    "epoch" INTEGER NOT NULL DEFAULT 1,
    "drained" BOOLEAN NOT NULL DEFAULT false,
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL,
    "joined_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "runtime_hosts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "session_entries" (
    "intern_id" UUID NOT NULL,
    "session_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "item" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "session_entries_pkey" PRIMARY KEY ("intern_id","session_id","seq")
);

-- CreateTable
CREATE TABLE "workspace_snapshots" (
    "intern_id" UUID NOT NULL,
    "generation" INTEGER NOT NULL,
    "store" TEXT NOT NULL,
    "bytes" BYTEA,
    "key" TEXT,
    "size" INTEGER NOT NULL,
    "sha256" TEXT NOT NULL,
    "taken_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workspace_snapshots_pkey" PRIMARY KEY ("intern_id")
);

-- CreateIndex
CREATE INDEX "runtime_hosts_state_heartbeat_at_idx" ON "runtime_hosts"("state", "heartbeat_at");

-- CreateIndex
CREATE INDEX "interns_runtime_host_id_status_idx" ON "interns"("runtime_host_id", "status");

-- AddForeignKey
ALTER TABLE "interns" ADD CONSTRAINT "interns_runtime_host_id_fkey" FOREIGN KEY ("runtime_host_id") REFERENCES "runtime_hosts"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "session_entries" ADD CONSTRAINT "session_entries_intern_id_fkey" FOREIGN KEY ("intern_id") REFERENCES "interns"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "workspace_snapshots" ADD CONSTRAINT "workspace_snapshots_intern_id_fkey" FOREIGN KEY ("intern_id") REFERENCES "interns"("id") ON DELETE CASCADE ON UPDATE CASCADE;
