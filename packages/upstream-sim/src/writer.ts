import type { ServerResponse } from 'node:http'
import type { SimSettings } from './settings.js'

/** Writes a stream at the configured pace, and can cut it mid-way as a failing upstream would. */
export class StreamWriter {
  private written = 0
  constructor(
    private readonly res: ServerResponse,
    private readonly settings: SimSettings,
    /** Events after which a `cut` fault drops the connection (`truncate` ends the stream). */
    private readonly cutAfter: number,
  ) {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
  }

  /** One SSE event (`event:` line only when named); false once the stream was cut or closed. */
  async event(data: unknown, name?: string, paced = false): Promise<boolean> {
    if (this.res.destroyed) return false
    if ((this.settings.fault === 'cut' || this.settings.fault === 'truncate') && this.written >= this.cutAfter) {
      if (this.settings.fault === 'cut') this.res.destroy()
      else this.res.end()
      return false
    }
    if (paced && this.settings.tokensPerSecond > 0)
      await new Promise((r) => setTimeout(r, 1000 / this.settings.tokensPerSecond))
    this.res.write(
      `${name ? `event: ${name}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`,
    )
    this.written++
    return true
  }

  end() {
    if (!this.res.destroyed) this.res.end()
  }
}

/** Splits a string into about `n` pieces, as argument deltas arrive. */
export function pieces(text: string, n = 3): string[] {
  const size = Math.max(1, Math.ceil(text.length / n))
  const out: string[] = []
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size))
  return out.length ? out : ['']
}
