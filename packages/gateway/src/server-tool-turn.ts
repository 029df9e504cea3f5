import { itemId, type TurnCall } from './assembler.js'
import { Cancellation } from './cancellation.js'
import type { InputItem } from './request.js'
import type { Run } from './run.js'
import type { ServerToolItem } from './wire.js'
import { writeItemProgress } from './stream-writer.js'
import { toolError, type ServerTool, type ToolCallContext } from './server-tools/tool.js'

/** What the engine gives every server tool call besides its arguments. */
export type ToolServices = { keepAliveMs?: number } & Pick<ToolCallContext, 'consult' | 'sandbox'>

/**
 * Runs the server tool the model called (or a plugin runs: `tool`), its item shown as it goes (a
 * stream gets keepalive comments while it runs), and answers the call and its output for the
 * model's next turn, with the output itself.
 */
export async function runServerTool(
  run: Run,
  call: TurnCall,
  services: ToolServices = {},
  tool: ServerTool = run.tools.get(call.name)!,
): Promise<{ items: InputItem[]; output: unknown }> {
  const keepAliveMs = services.keepAliveMs ?? 10_000
  let args: Record<string, unknown> = {}
  try {
    const parsed: unknown = JSON.parse(call.arguments || '{}')
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed as Record<string, unknown>
  } catch {}
  const item: ServerToolItem = {
    type: tool.type,
    id: itemId('st'),
    call_id: call.callId,
    status: 'in_progress',
    arguments: call.arguments,
    output: null,
  }
  // Announced first, so a stream is open (and its client knows) while the tool runs.
  const index = run.assembler.startItem({ ...item })
  let output: unknown
  // A tool may take seconds (web_fetch): the stream gets SSE comments meanwhile, so proxies and
  // clients with idle timeouts keep it. Clients skip lines that start with ':'.
  const live = run.live
  const keepalive = run.opts.doorStream?.keepalive() ?? ': running a server tool\n\n'
  const heartbeat = live ? setInterval(() => live.sink.write(keepalive), keepAliveMs) : undefined
  // A call past the entry's max_uses is answered, not run: the model learns it may search no more.
  const uses = (run.toolUses ??= new Map())
  const used = uses.get(call.name) ?? 0
  uses.set(call.name, used + 1)
  if (tool.type === 'openrouter:bash' || tool.type === 'openrouter:shell') run.sandboxUsed = true
  try {
    output =
      tool.maxUses !== undefined && used >= tool.maxUses
        ? toolError(`${call.name} may be called ${tool.maxUses} times in one request; it was`)
        : await tool.run(args, {
            signal: (run.opts.cancel ?? new Cancellation()).signal,
            consult: services.consult,
            sandbox: services.sandbox,
            model: run.route.candidates[run.chosen]?.model.id ?? run.req.model,
            progress: (type, fields) => writeItemProgress(run, type, { item_id: item.id, output_index: index }, fields),
          })
  } catch (err) {
    output = toolError((err as Error).message)
  } finally {
    clearInterval(heartbeat)
  }
  const text = JSON.stringify(output)
  run.assembler.finishItem(index, { ...item, output: text, ...tool.itemFields?.(args, output), status: 'completed' })
  return {
    items: [
      { type: 'function_call', call_id: call.callId, name: call.name, arguments: call.arguments },
      { type: 'function_call_output', call_id: call.callId, output: text },
    ],
    output,
  }
}
