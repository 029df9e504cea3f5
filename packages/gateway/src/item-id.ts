import { randomBytes } from 'node:crypto'

// Ids need to be unique, not secret: a random per-process part and a counter are as unique as
// 12 random bytes each time, without a call into the system's random source per item.
const PROCESS_PART = randomBytes(8).toString('hex')
let counter = 0
export const itemId = (prefix: string) => `${prefix}_${PROCESS_PART}${(counter++).toString(16).padStart(8, '0')}`

/**
 * A request's id (its generations' too): its second first (8 hex digits), then as itemId's. The
 * generations are partitioned by day, and a lookup by id reads only the days around its second
 * (generationTimeOf, @roster/protocol).
 */
export const runId = () =>
  `resp_${Math.floor(Date.now() / 1000)
    .toString(16)
    .padStart(8, '0')}${PROCESS_PART}${(counter++).toString(16).padStart(8, '0')}`
