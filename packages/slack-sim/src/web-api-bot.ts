import { id } from './signing.js'
import type { SimState } from './state.js'
import type { SlackSimMessage } from './types.js'

/**
 * chat.postMessage, chat.update, conversations.replies and .history, users.info, views.open,
 * assistant.threads.setStatus, auth.revoke: as Slack answers them.
 */
export function botMethod(
  { sim, triggers, revoked, nextTs }: SimState,
  method: string,
  p: Record<string, string>,
  token: string,
): object {
  if (method === 'chat.postMessage') {
    if (!p.channel) return { ok: false, error: 'channel_not_found' }
    if (!p.text && !p.blocks) return { ok: false, error: 'no_text' }
    const message: SlackSimMessage = {
      channel: p.channel,
      ts: nextTs(),
      ...(p.thread_ts ? { thread_ts: p.thread_ts } : {}),
      text: p.text ?? '',
      history: [],
      ...(p.blocks ? { blocks: JSON.parse(p.blocks) as Record<string, unknown>[] } : {}),
      ...(p.metadata ? { metadata: JSON.parse(p.metadata) as SlackSimMessage['metadata'] } : {}),
    }
    sim.messages.push(message)
    for (const w of sim.watchers) w(message)
    return {
      ok: true,
      channel: p.channel,
      ts: message.ts,
      message: { type: 'message', text: message.text, ts: message.ts },
    }
  }
  if (method === 'chat.update') {
    const message = sim.messages.find((m) => m.channel === p.channel && m.ts === p.ts)
    if (!message) return { ok: false, error: 'message_not_found' }
    message.history.push(message.text)
    message.text = p.text ?? ''
    if (p.blocks) message.blocks = JSON.parse(p.blocks) as Record<string, unknown>[]
    for (const w of sim.watchers) w(message)
    return { ok: true, channel: p.channel, ts: p.ts, text: message.text }
  }
  if (method === 'chat.postEphemeral') {
    if (!p.channel || !p.user) return { ok: false, error: 'channel_not_found' }
    sim.ephemerals.push({
      channel: p.channel,
      user: p.user,
      ...(p.thread_ts ? { thread_ts: p.thread_ts } : {}),
      text: p.text ?? '',
    })
    return { ok: true, message_ts: nextTs() }
  }
  if (method === 'conversations.replies') {
    // The thread's messages, oldest first (the bot's own, as this stand-in knows no others);
    // metadata only when asked for, as Slack does.
    if (!p.channel || !p.ts) return { ok: false, error: 'thread_not_found' }
    const withMeta = p.include_all_metadata === 'true' || (p.include_all_metadata as unknown) === true
    const messages = sim.messages
      .filter((m) => m.channel === p.channel && (m.thread_ts === p.ts || m.ts === p.ts))
      .map((m) => ({
        type: 'message',
        ts: m.ts,
        thread_ts: m.thread_ts,
        text: m.text,
        ...(withMeta && m.metadata ? { metadata: m.metadata } : {}),
      }))
    return { ok: true, messages, has_more: false }
  }
  if (method === 'conversations.history') {
    // The conversation's own messages (not its threads' replies), newest first, from `oldest` on.
    if (!p.channel) return { ok: false, error: 'channel_not_found' }
    const withMeta = p.include_all_metadata === 'true' || (p.include_all_metadata as unknown) === true
    const oldest = Number(p.oldest ?? 0)
    const messages = sim.messages
      .filter((m) => m.channel === p.channel && !m.thread_ts && Number(m.ts) >= oldest)
      .reverse()
      .map((m) => ({
        type: 'message',
        ts: m.ts,
        text: m.text,
        ...(withMeta && m.metadata ? { metadata: m.metadata } : {}),
      }))
    return { ok: true, messages, has_more: false }
  }
  if (method === 'users.info') {
    const person = p.user ? sim.people.get(p.user) : undefined
    if (!person) return { ok: false, error: 'user_not_found' }
    return {
      ok: true,
      user: {
        id: p.user,
        team_id: sim.team.id,
        name: person.name,
        real_name: person.realName,
        profile: { display_name: person.displayName, real_name: person.realName },
      },
    }
  }
  if (method === 'views.open') {
    const trigger = p.trigger_id ? triggers.get(p.trigger_id) : undefined
    if (!trigger) return { ok: false, error: 'invalid_trigger_id' }
    triggers.delete(p.trigger_id!)
    if (Date.now() - trigger.at > 3_000) return { ok: false, error: 'expired_trigger_id' }
    let view: Record<string, unknown>
    try {
      view = JSON.parse(p.view ?? '') as Record<string, unknown>
    } catch {
      return { ok: false, error: 'invalid_arguments' }
    }
    if (view.type !== 'modal' || !Array.isArray(view.blocks)) return { ok: false, error: 'invalid_arguments' }
    const opened = { id: id('V'), user: trigger.user, view }
    sim.views.push(opened)
    return { ok: true, view: { id: opened.id, ...view } }
  }
  if (method === 'assistant.threads.setStatus') return { ok: true }
  if (method === 'auth.revoke') {
    revoked.add(token)
    return { ok: true, revoked: true }
  }
  return { ok: false, error: 'unknown_method' }
}
