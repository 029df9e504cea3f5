import type { Db } from '../db.js'
import { GroupCommit } from '../group-commit.js'
import { insertMany, insertOne, type InsertOutcome, type PreparedCreate } from '../repositories/interns.js'

/**
 * Group commit for creates (see GroupCommit). Creates with one idempotency key may share a batch:
 * the statement claims the key once and the others come back as replays.
 */
export class CreateBatcher extends GroupCommit<PreparedCreate, InsertOutcome> {
  constructor(db: Db, limit: number) {
    super({
      writeMany: async (items) => {
        const outcomes = await insertMany(db, items, limit)
        return items.map((p) => outcomes.get(p.internId)!)
      },
      writeOne: (item) => insertOne(db, item, limit),
    })
  }
}
