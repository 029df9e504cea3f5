-- CreateTable
CREATE TABLE "generations" (
    "id" TEXT NOT NULL,
    "request_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "key_id" UUID,
    "workspace_id" UUID,
    "account_id" UUID,
    "user_id" UUID,
    "intern_id" UUID,
    "model" TEXT NOT NULL,
    "provider" TEXT,
    "upstream_model" TEXT,
    "door" TEXT NOT NULL,
    "tokens_prompt" INTEGER NOT NULL,
    "tokens_completion" INTEGER NOT NULL,
    "tokens_reasoning" INTEGER NOT NULL,
    "tokens_cached" INTEGER NOT NULL,
    "cost_pico" BIGINT NOT NULL,
    "is_byok" BOOLEAN NOT NULL DEFAULT false,
    "latency_ms" INTEGER,
    "generation_time_ms" INTEGER,
    "ttft_ms" INTEGER,
    "streamed" BOOLEAN NOT NULL,
    "cancelled" BOOLEAN NOT NULL,
    "finish_reason" TEXT,
    "upstream_id" TEXT,
    "session_id" TEXT,
    "http_referer" TEXT,
    "app_title" TEXT,
    "user_agent" TEXT,
    "external_user" TEXT,
    "preset_id" TEXT,
    "provider_responses" JSONB NOT NULL DEFAULT '[]',

    CONSTRAINT "generations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "key_spend" (
    "key_id" UUID NOT NULL,
    "period" TEXT NOT NULL,
    "credits_pico" DECIMAL(38,0) NOT NULL DEFAULT 0,
    "byok_pico" DECIMAL(38,0) NOT NULL DEFAULT 0,

    CONSTRAINT "key_spend_pkey" PRIMARY KEY ("key_id","period")
);

-- CreateTable
CREATE TABLE "generation_feedback" (
    "id" UUID NOT NULL,
    "generation_id" TEXT NOT NULL,
    "key_id" UUID NOT NULL,
    "category" TEXT NOT NULL,
    "comment" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "generation_feedback_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "generations_key_id_created_at_idx" ON "generations"("key_id", "created_at");

-- CreateIndex
CREATE INDEX "generations_account_id_created_at_idx" ON "generations"("account_id", "created_at");

-- CreateIndex
CREATE INDEX "generation_feedback_generation_id_idx" ON "generation_feedback"("generation_id");
