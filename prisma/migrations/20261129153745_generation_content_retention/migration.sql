-- Kept request bodies are swept once older than the retention setting: found by their age.
-- CreateIndex
CREATE INDEX "generation_content_created_at_idx" ON "generation_content"("created_at");
