import type { FastifyReply, FastifyRequest } from 'fastify'

// The pages a person's browser is shown on the way to and back from Slack's install (a link
// followed, Slack's redirect back): plain HTML, never the API's JSON, no scripts, not cached.

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

const page = (title: string, text: string) =>
  `<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
  `<title>${escape(title)}</title><body style="font-family:system-ui,sans-serif;max-width:36em;margin:4em auto">` +
  `<h1>${escape(title)}</h1><p>${escape(text)}</p></body></html>`

/** Sends `title` and `text` as a page for a person, with `status`. */
export function sendPage(reply: FastifyReply, status: number, title: string, text: string) {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
    .send(page(title, text))
}

/** Whether the request is a person's browser (no API key, HTML asked for), not an API client. */
export const fromBrowser = (req: FastifyRequest) =>
  !req.headers.authorization && !req.headers['x-api-key'] && (req.headers.accept ?? '').includes('text/html')
