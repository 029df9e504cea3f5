import type { ServerResponse } from 'node:http'

/** An answer as the Web API gives every one: HTTP 200 and JSON (`ok: false` for a refusal). */
export const json = (res: ServerResponse, body: object) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
  res.end(JSON.stringify(body))
}
