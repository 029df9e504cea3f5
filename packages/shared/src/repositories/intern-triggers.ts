import type { Db, Prisma } from '../db.js'

// intern_triggers: an intern's webhook triggers (a prompt, a session, an approval mode) and each
// one's secret, sealed (a delivery's signature is checked with it). Their turns are in intern_turns.

type Tx = Db | Prisma.TransactionClient

export interface TriggerFields {
  name: string
  prompt: string
  sessionId: string | null
  approvalMode: string
  slackChannel: string | null
  enabled: boolean
}

export const countTriggers = (db: Tx, internId: string) => db.internTrigger.count({ where: { internId } })

const listed = {
  id: true,
  internId: true,
  name: true,
  prompt: true,
  sessionId: true,
  approvalMode: true,
  slackChannel: true,
  enabled: true,
  createdAt: true,
  updatedAt: true,
} as const

/** `id` is made by the caller: the secret is sealed bound to it before the row exists. */
export const insertTrigger = (db: Tx, id: string, internId: string, fields: TriggerFields, sealedSecret: Uint8Array) =>
  db.internTrigger.create({
    data: { id, internId, ...fields, sealedSecret: new Uint8Array(sealedSecret) },
    select: listed,
  })

export const triggersOf = (db: Tx, internId: string) =>
  db.internTrigger.findMany({ where: { internId }, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], select: listed })

export const triggerOf = (db: Tx, internId: string, id: string) =>
  db.internTrigger.findFirst({ where: { id, internId }, select: listed })

/** A trigger with its sealed secret and its intern's status (what a delivery is checked and run with). */
export const triggerForDelivery = (db: Tx, id: string) =>
  db.internTrigger.findUnique({ where: { id }, include: { intern: { select: { status: true, workspaceId: true } } } })

export const updateTrigger = (
  db: Tx,
  internId: string,
  id: string,
  fields: Partial<TriggerFields> & { sealedSecret?: Uint8Array },
) =>
  db.internTrigger.update({
    where: { id, internId },
    data: {
      name: fields.name,
      prompt: fields.prompt,
      sessionId: fields.sessionId,
      approvalMode: fields.approvalMode,
      slackChannel: fields.slackChannel,
      enabled: fields.enabled,
      ...(fields.sealedSecret ? { sealedSecret: new Uint8Array(fields.sealedSecret) } : {}),
      updatedAt: new Date(),
    },
    select: listed,
  })

export const deleteTrigger = (db: Tx, internId: string, id: string) =>
  db.internTrigger.deleteMany({ where: { id, internId } })
