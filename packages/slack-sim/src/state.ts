import { randomBytes } from 'node:crypto'
import { id } from './signing.js'
import type { SlackSim, SlackSimApp } from './types.js'

/** What the stand-in's workspace holds, shared by its Web API methods and what its people do. */
export interface SimState {
  sim: SlackSim
  /** The workspace installs land in. */
  team: { id: string; name: string }
  /** Apps registered or minted, by client id. */
  apps: Map<string, SlackSimApp>
  /** Authorization codes not yet exchanged: single use, bound to the app and redirect URL. */
  codes: Map<string, { clientId: string; redirectUri: string; user: string }>
  revoked: Set<string>
  /** Triggers a click issued (good for 3 seconds, once), with who clicked. */
  triggers: Map<string, { user: string; at: number }>
  /** Files people uploaded, by id. */
  files: Map<string, Buffer>
  /** App configuration tokens (by token: when it expires). */
  configTokens: Map<string, number>
  /** Configuration refresh tokens not yet spent. */
  refreshTokens: Set<string>
  issueTrigger(user: string): string
  issueConfigToken(ttlSeconds?: number): { token: string; refreshToken: string; exp: number }
  /** Slack's message timestamps: seconds and a unique suffix. */
  nextTs(): string
}

export function newState(sim: SlackSim): SimState {
  const triggers = new Map<string, { user: string; at: number }>()
  const configTokens = new Map<string, number>()
  const refreshTokens = new Set<string>()
  let clock = 0
  return {
    sim,
    team: sim.team,
    apps: new Map(),
    codes: new Map(),
    revoked: new Set(),
    triggers,
    files: new Map(),
    configTokens,
    refreshTokens,
    issueTrigger(user) {
      const trigger = `${Date.now()}.${randomBytes(6).toString('hex')}`
      triggers.set(trigger, { user, at: Date.now() })
      return trigger
    },
    issueConfigToken(ttlSeconds = 12 * 3600) {
      const token = `xoxe.xoxp-1-${randomBytes(12).toString('hex')}`
      const refreshToken = `xoxe-1-${randomBytes(12).toString('hex')}`
      configTokens.set(token, Date.now() + ttlSeconds * 1000)
      refreshTokens.add(refreshToken)
      return { token, refreshToken, exp: Math.floor(Date.now() / 1000) + ttlSeconds }
    },
    nextTs: () => `${Math.floor(Date.now() / 1000)}.${String(++clock).padStart(6, '0')}`,
  }
}

/** A new workspace's id and name. */
export const newTeam = () => ({ id: id('T'), name: 'Roster Test Workspace' })
