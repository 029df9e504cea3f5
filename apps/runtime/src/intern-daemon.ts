import { join } from 'node:path'
import type { InternSpec } from '@roster/protocol'
import { SessionStore } from './agent/session-store.js'
import { runAgentTurn } from './agent/agent-turn.js'
import { InternDaemon } from './agent/daemon.js'
import { InternMcp } from './agent/mcp-tools.js'
import { joinTools, skillsFinder, skillTools } from './agent/skills.js'
import type { HostedIntern } from './hosted-intern.js'
import type { InternsDeps } from './interns-deps.js'
import type { InternWorkspaces } from './intern-workspaces.js'

/** Only when neither this host nor the API names a default (an API serving no model): the simulator's. */
const FALLBACK_MODEL = 'roster-sim/chat'

/**
 * An intern's daemon: its sessions kept with the record, its turns run in its sandbox with its own
 * key and tools, its workspace snapshotted after each. `spec` is its configuration as it is now (a
 * PATCH may have changed the model or instructions since the daemon was made).
 */
export function makeDaemon(
  deps: InternsDeps,
  intern: HostedIntern,
  spec: () => InternSpec,
  workspaces: InternWorkspaces,
): InternDaemon {
  const { config, fleet, commands, proxies, log } = deps
  const sessions = new SessionStore(join(workspaces.dir(intern.id), 'sessions'), {
    ids: () => fleet.sessionIds(intern.id),
    load: (sessionId) => fleet.loadSession(intern.id, sessionId),
    append: (sessionId, from, items) => fleet.appendSession(intern.id, sessionId, from, items),
  })
  const workspace = workspaces.workspace(intern.id)
  const findSkills = skillsFinder(workspace)
  // Its own model, else this host's setting, else the API's default (told as the host joined).
  const model = () => spec().model ?? config.INTERN_DEFAULT_MODEL ?? fleet.internDefaultModel ?? FALLBACK_MODEL
  // Its MCP servers' tools: connected through the egress, found again as each turn starts.
  const mcp = new InternMcp(
    intern.id,
    fleet,
    {
      timeoutMs: config.MCP_TOOL_TIMEOUT_MS,
      maxResponseBytes: config.MCP_RESPONSE_MAX_BYTES,
      idleMs: config.MCP_SESSION_IDLE_MS,
    },
    log,
  )
  return new InternDaemon({
    sessions,
    deadlineMs: config.INTERACTION_DEADLINE_MS,
    maxPaused: config.RUN_MAX_PAUSED,
    maxSubagents: config.INTERN_SUBAGENTS_AT_ONCE,
    model,
    onError: (err, sessionId) => log.warn({ err, intern: intern.id, session: sessionId }, 'an intern turn failed'),
    // The intern leaves this host (suspended, moved, deleted, the host draining): its MCP sessions end.
    onStop: () => mcp.close(),
    execute: async (run) => {
      const { token, instructions } = spec()
      // Its skills (by name and description: read in full when used) and its MCP servers' tools.
      // Looked for at once: both are on the way to the turn's first model call.
      const [skills, mcpTools] = await Promise.all([findSkills().catch(() => undefined), mcp.tools(run.signal)])
      const extraTools = joinTools(skills && skillTools(workspace, skills.skills), mcpTools)
      try {
        return await runAgentTurn(
          {
            apiBase: config.ROSTER_API_URL,
            apiKey: token,
            model: run.subagent?.model ?? model(),
            instructions,
            workspace,
            runCommand: async (command, { network, ...limits }, signal) =>
              commands.run(
                command,
                { ...limits, workspace, egressSocket: network ? await proxies.socketFor(intern.id) : undefined },
                signal,
              ),
            sessions,
            maxSteps: config.RUN_MAX_STEPS,
            commandTimeoutMs: config.COMMAND_TIMEOUT_MS,
            steered: run.steered,
            onRetry: (err, waitMs, attempt) =>
              log.warn(
                { intern: intern.id, session: run.sessionId, status: err.status, waitMs, attempt },
                `an intern's model call was refused (${err.message}); making it again`,
              ),
            // Secrets are released by the API's egress, for the intern placed here and no other.
            http: (args, signal) => fleet.send(intern.id, args, signal),
            approval: run.approval,
            commandNetwork: commands.mode !== 'refused',
            ask: run.ask,
            extraTools,
            budgetUsd: run.subagent?.budget_usd,
            webSearch: config.INTERN_WEB_SEARCH === 'auto' && fleet.internWebSearch,
            // A subagent starts none of its own.
            startSubagent: run.subagent
              ? undefined
              : async (args) => {
                  try {
                    const started = await fleet.startSubagent(intern.id, {
                      ...args,
                      session_id: run.sessionId,
                      approval_mode: run.approval,
                    })
                    return {
                      subagent: started.turn_id,
                      session_id: started.session_id,
                      note: 'it runs alongside you, in a session of its own; you will be told in this session when it ends',
                    }
                  } catch (err) {
                    return { error: `no subagent was started: ${(err as Error).message}` }
                  }
                },
          },
          run.sessionId,
          run.prompt,
          run.emit,
          run.signal,
        )
      } finally {
        // Whatever the turn changed in the workspace is kept off the host before the turn is
        // said to be done: a host that dies after it loses nothing of it.
        await workspaces.snapshot(intern)
      }
    },
  })
}
