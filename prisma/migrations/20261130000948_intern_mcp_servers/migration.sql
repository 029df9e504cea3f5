-- The remote MCP servers interns' tools come from (issue 61), with the tools their hosts last found there.
-- CreateTable
CREATE TABLE "intern_mcp_servers" (
    "id" UUID NOT NULL,
    "intern_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "headers" JSONB NOT NULL DEFAULT '{}',
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "tools" JSONB,
    "tools_error" TEXT,
    "tools_seen_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "intern_mcp_servers_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "intern_mcp_servers_intern_id_name_key" ON "intern_mcp_servers"("intern_id", "name");

-- AddForeignKey
ALTER TABLE "intern_mcp_servers" ADD CONSTRAINT "intern_mcp_servers_intern_id_fkey" FOREIGN KEY ("intern_id") REFERENCES "interns"("id") ON DELETE CASCADE ON UPDATE CASCADE;
