-- Member quota moves from one counter per member to QUOTA_SHARDS (16) rows per member, so that one
-- member's concurrent creates take different row locks (see schema.prisma, MemberQuotaShard).

-- CreateTable
CREATE TABLE "member_quota_shards" (
    "user_id" UUID NOT NULL,
    "shard" SMALLINT NOT NULL,
    "used" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "member_quota_shards_pkey" PRIMARY KEY ("user_id","shard")
);

-- AddForeignKey
ALTER TABLE "member_quota_shards" ADD CONSTRAINT "member_quota_shards_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Each member's existing count is spread evenly over their shards.
INSERT INTO "member_quota_shards" ("user_id", "shard", "used")
SELECT u."id", s.shard, u."intern_count" / 16 + CASE WHEN s.shard < u."intern_count" % 16 THEN 1 ELSE 0 END
FROM "users" u CROSS JOIN generate_series(0, 15) AS s(shard);

-- AlterTable
ALTER TABLE "users" DROP COLUMN "intern_count";
