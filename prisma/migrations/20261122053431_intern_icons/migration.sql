-- CreateTable
CREATE TABLE "intern_icons" (
    "intern_id" UUID NOT NULL,
    "content_type" TEXT NOT NULL,
    "bytes" BYTEA NOT NULL,
    "sha256" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "intern_icons_pkey" PRIMARY KEY ("intern_id")
);

-- AddForeignKey
ALTER TABLE "intern_icons" ADD CONSTRAINT "intern_icons_intern_id_fkey" FOREIGN KEY ("intern_id") REFERENCES "interns"("id") ON DELETE CASCADE ON UPDATE CASCADE;
