import { itemId, type TurnCall } from './assembler.js'
import { Cancellation } from './cancellation.js'
import type { InputItem } from './request.js'
import type { Run } from './run.js'
import type { HandedOverItem, ServerToolItem } from './wire.js'
import { writeItemProgress } from './stream-writer.js'
import { toolError, type ServerTool, type ToolCallContext } from './server-tools/tool.js'

/** What the engine gives every server tool call besides its arguments. */
export type ToolServices = { keepAliveMs?: number } & Pick<
  ToolCallContext,
  'consult' | 'sandbox' | 'generateImage' | 'files'
>

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
): Promise<{ items: InputItem[]; output: unknown; handedOver?: boolean }> {
  if (tool.handsOver) {
    const handed = await handOver(run, call, tool)
    if (handed) return handed
  }
  const keepAliveMs = services.keepAliveMs ?? 10_000
  const args = argumentsOf(call)
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
            generateImage: services.generateImage,
            files: services.files,
            model: run.route.candidates[run.chosen]?.model.id ?? run.req.model,
            progress: (type, fields) => writeItemProgress(run, type, { item_id: item.id, output_index: index }, fields),
          })
  } catch (err) {
    output = toolError((err as Error).message)
  } finally {
    clearInterval(heartbeat)
  }
  const text = JSON.stringify(tool.modelOutput ? tool.modelOutput(output) : output)
  run.assembler.finishItem(index, { ...item, output: text, ...tool.itemFields?.(args, output), status: 'completed' })
  return {
    items: [
      { type: 'function_call', call_id: call.callId, name: call.name, arguments: call.arguments },
      { type: 'function_call_output', call_id: call.callId, output: text },
    ],
    output,
  }
}

/**
 * A call Roster checked and the client carries out (ServerTool.handsOver): shown as the item the
 * client acts on, its diff as one delta on a stream, as OpenRouter's check delivers it; nothing
 * goes back to the model, whose next turn waits on the client's answer. Undefined when the check
 * failed: the call is then answered to the model as any server tool's error is.
 */
async function handOver(run: Run, call: TurnCall, tool: ServerTool) {
  const output = await tool.run(argumentsOf(call), { signal: (run.opts.cancel ?? new Cancellation()).signal })
  const operation = (output as { operation?: HandedOverItem['operation'] } | null)?.operation
  if (!operation) return undefined
  const item: HandedOverItem = {
    type: run.opts.providerItemNames === 'slugged' ? 'openrouter:apply_patch' : 'apply_patch_call',
    id: itemId('apc'),
    call_id: call.callId,
    status: 'in_progress',
    operation: operation.diff === undefined ? operation : { ...operation, diff: '' },
  }
  const index = run.assembler.startItem(item)
  if (operation.diff !== undefined) {
    const at = { item_id: item.id, output_index: index }
    writeItemProgress(run, 'response.apply_patch_call_operation_diff.delta', at, { delta: operation.diff })
    writeItemProgress(run, 'response.apply_patch_call_operation_diff.done', at, { diff: operation.diff })
  }
  run.assembler.finishItem(index, { ...item, operation, status: 'completed' })
  return { items: [], output, handedOver: true }
}

/** A call's arguments as an object (what does not parse as one reads as none). */
function argumentsOf(call: TurnCall): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(call.arguments || '{}')
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>
  } catch {}
  return {}
}
