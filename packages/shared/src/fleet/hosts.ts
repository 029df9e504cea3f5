import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Db } from '../db.js'
import { transition } from '../intern-state.js'
import { statuses } from '../intern-statuses.js'
import { enqueueInTx } from '../repositories/outbox.js'
import { declareDeadHosts } from '../repositories/runtime-hosts.js'
import { strandedInterns, unplaceMoved } from '../repositories/interns.js'
import type { FleetTimes } from './times.js'

// The fleet of runtime hosts: hosts join and beat, interns are placed on live hosts with room, and
// the interns of a host that died (or finished draining) are placed again. Every placement carries
// the provision generation it was made under: a host may act for an intern only while the record
// still places the intern there under that generation. The statements are the repositories'
// (runtime-hosts.ts, interns.ts).

/**
 * The key host credentials are derived from. Only the API and the workers have it (from the
 * master key, which no host holds): a host is given its own credential when it joins, and cannot
 * work out another's.
 */
export const hostCredentialKey = (masterKey: Buffer) =>
  createHmac('sha256', masterKey).update('roster runtime host credential').digest()

/** A host's credential for one epoch of its membership. */
export const hostCredential = (key: Buffer, hostId: string, epoch: number) =>
  createHmac('sha256', key).update(`${hostId}:${epoch}`).digest('base64url')

/** Whether `given` is the credential of `hostId` in `epoch` (in constant time). */
export function isHostCredential(key: Buffer, hostId: string, epoch: number, given: string | undefined): boolean {
  if (!given) return false
  const want = Buffer.from(hostCredential(key, hostId, epoch))
  const got = Buffer.from(given)
  return got.length === want.length && timingSafeEqual(got, want)
}

/**
 * Declares dead the hosts whose heartbeat is older than `deadAfterMs`, then places again the
 * interns of every host that is dead or has finished draining: each goes back to `queued` under a
 * new generation, with a provisioning job, and is placed on another host by its run. Answers the
 * hosts declared dead and the interns moved.
 */
export async function vacateHosts(db: Db, times: FleetTimes): Promise<{ dead: string[]; moved: string[] }> {
  const dead = await declareDeadHosts(db, times.deadAfterMs)
  const moved: string[] = []
  for (const id of await strandedInterns(db)) {
    const done = await db.$transaction(async (tx) => {
      const next = await transition(tx, {
        internId: id,
        from: statuses('onHost'),
        to: 'queued',
        set: { progress: null, lastFailureMessage: null, bumpGeneration: true },
      })
      if (!next) return false
      // Unplaced: its run places it anew (never on the host it left: that one is dead or draining).
      await unplaceMoved(tx, id)
      await enqueueInTx(tx, 'intern.provision', { internId: id, generation: next.provision_generation })
      return true
    })
    if (done) moved.push(id)
  }
  return { dead, moved }
}
