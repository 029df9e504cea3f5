// Server-Sent Events as Roster writes them (the streams between its processes and to clients), and
// an event as read (@roster/platform's event-stream.ts reads them).

/** One event's `data:` line (and its `event:` name, when it has one). */
export const sseEvent = (data: unknown, name?: string) =>
  `${name ? `event: ${name}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`

/** A comment line: clients skip it; it keeps idle connections from being cut on the way. */
export const SSE_COMMENT = ': keepalive\n\n'

/** One event as read: its `data`, and its `event:` name when it has one. */
export interface StreamEvent {
  event?: string
  data: string
}
