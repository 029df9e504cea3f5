-- The questions interns' runs asked, by when (the console's inbox lists those still open): a
-- partial index over the session items that are questions, which are few among the rest.
CREATE INDEX "session_entries_questions_idx" ON "session_entries" ("created_at")
  WHERE (item->>'type') = 'roster.interaction';
