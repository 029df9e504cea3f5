/**
 * The Redis channel on which writers ring the relay's bell after committing outbox rows. A bell,
 * not the message: the rows are in Postgres, and a lost bell only delays them until the relay's
 * next poll. (Postgres NOTIFY would do the same, but a notifying transaction holds a global lock
 * through its commit, which serialises every create.)
 */
export const outboxBellChannel = (queuePrefix: string) => `${queuePrefix}:outbox-bell`
