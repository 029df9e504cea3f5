import type { IncomingMessage, ServerResponse } from 'node:http'

// Ollama's own model API as its docs describe it (docs/api.md: GET /api/tags lists the models pulled,
// POST /api/show describes one, its capabilities and its model_info with `<family>.context_length`),
// so the simulator stands in for an Ollama server: its OpenAI-compatible /v1 endpoints are the
// simulator's own. Our reading, not Ollama: where they differ, Ollama wins.

/** A model the stand-in says it has pulled. */
export interface OllamaModel {
  /** As Ollama names it, with its tag (`llama3.2:latest`). */
  name: string
  /** Ollama's capability names: completion, tools, vision, thinking, embedding… */
  capabilities: string[]
  contextLength: number
}

/** Answers /api/tags and /api/show when `models` are set; false for any other request (or none set). */
export async function answerOllama(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  models: OllamaModel[] | undefined,
  body: () => Promise<string>,
): Promise<boolean> {
  if (!models) return false
  const send = (status: number, value: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value))
    return true
  }
  if (req.method === 'GET' && path === '/api/tags')
    return send(200, {
      models: models.map((m) => ({
        name: m.name,
        model: m.name,
        modified_at: '2026-01-01T00:00:00Z',
        size: 2_019_393_189,
        digest: 'a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72',
        details: {
          format: 'gguf',
          family: m.name.split(/[:.\d]/)[0],
          parameter_size: '3.2B',
          quantization_level: 'Q4_K_M',
        },
      })),
    })
  if (req.method === 'POST' && path === '/api/show') {
    let name: unknown
    try {
      name = (JSON.parse(await body()) as { model?: unknown; name?: unknown }).model
    } catch {
      return send(400, { error: 'invalid JSON' })
    }
    const model = models.find((m) => m.name === name)
    if (!model) return send(404, { error: `model '${String(name)}' not found` })
    const family = model.name.split(/[:.\d]/)[0]
    return send(200, {
      details: { format: 'gguf', family },
      model_info: { 'general.architecture': family, [`${family}.context_length`]: model.contextLength },
      capabilities: model.capabilities,
    })
  }
  return false
}
