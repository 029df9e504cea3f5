import type { PlacedOn, SlackFile } from '@roster/shared/repositories'
import type { WorkerDeps } from '../context.js'
import type { SlackPoster } from './poster.js'

// The files a person shared with a message, fetched with the bot token into the intern's workspace
// (slack-files/<thread>/<name>) before its turn, and named in its prompt: where each landed, or why
// it did not (too large, not readable).

/** A file name as a path segment of the workspace: no separators, no leading dot, not too long. */
export function safeFileName(name: string): string {
  const cleaned = name
    .replace(/[/\\\0]/g, '_')
    .replace(/^\.+/, '_')
    .trim()
    .slice(0, 200)
  return cleaned || 'file'
}

/** Lines for the prompt, one per file. */
export async function fetchSharedFiles(
  deps: WorkerDeps,
  placed: PlacedOn,
  event: { internId: string; channel: string; threadTs: string; files: SlackFile[] },
  slack: SlackPoster,
): Promise<string[]> {
  const maxBytes = deps.config.SLACK_FILE_MAX_MB * 1024 * 1024
  const lines: string[] = []
  const taken = new Set<string>()
  for (const file of event.files) {
    const name = safeFileName(file.name)
    if (file.size !== null && file.size > maxBytes) {
      lines.push(
        `- ${name}: not fetched (${file.size} bytes, more than the ${deps.config.SLACK_FILE_MAX_MB} MiB allowed)`,
      )
      continue
    }
    const got = file.url
      ? await slack.download(file.url, maxBytes)
      : { ok: false as const, why: 'Slack gave no link to it' }
    if (!got.ok) {
      lines.push(`- ${name}: not fetched (${got.why})`)
      continue
    }
    // Two files of one name in a message keep both.
    const unique = taken.has(name) ? `${file.id}-${name}` : name
    taken.add(unique)
    const put = await deps.runtime.putFile(
      placed,
      event.internId,
      // A thread's files together; a direct message's (no thread) under its conversation.
      `slack-files/${safeFileName(event.threadTs || event.channel)}/${unique}`,
      got.bytes,
    )
    lines.push(`- ${put.path} (${put.bytes} bytes)`)
  }
  return lines
}
