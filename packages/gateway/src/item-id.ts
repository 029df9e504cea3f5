import { randomBytes } from 'node:crypto'

// Ids need to be unique, not secret: a random per-process part and a counter are as unique as
// 12 random bytes each time, without a call into the system's random source per item.
const PROCESS_PART = randomBytes(8).toString('hex')
let counter = 0
export const itemId = (prefix: string) => `${prefix}_${PROCESS_PART}${(counter++).toString(16).padStart(8, '0')}`
