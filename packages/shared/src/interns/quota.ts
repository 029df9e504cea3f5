/**
 * Rows a member's intern count is split over (see MemberQuotaShard in schema.prisma). Shard i may
 * hold limit / QUOTA_SHARDS interns, plus one when i < limit % QUOTA_SHARDS, so the caps add up to
 * the limit exactly. The migration that created the shards spreads existing counts the same way.
 */
export const QUOTA_SHARDS = 16
