import { createHmac, randomBytes } from 'node:crypto'

// What Slack puts around and on what it sends: the event envelope, the v0 signature, its ids.

/** A Events API event_callback envelope around `event`, as Slack sends one. */
export function eventCallback(
  teamId: string,
  event: Record<string, unknown>,
  eventId = `Ev${randomBytes(5).toString('hex').toUpperCase()}`,
) {
  return {
    token: 'deprecated-verification-token',
    team_id: teamId,
    api_app_id: 'A0',
    event: { event_ts: event.ts, ...event },
    type: 'event_callback',
    event_id: eventId,
    event_time: Math.floor(Date.now() / 1000),
  }
}

/** Slack's v0 signature headers over a body, as Slack signs what it sends. */
export function signed(signingSecret: string, body: string) {
  const timestamp = String(Math.floor(Date.now() / 1000))
  const signature = `v0=${createHmac('sha256', signingSecret).update(`v0:${timestamp}:${body}`).digest('hex')}`
  return { 'x-slack-request-timestamp': timestamp, 'x-slack-signature': signature }
}

export const id = (prefix: string) => `${prefix}${randomBytes(5).toString('hex').toUpperCase()}`
