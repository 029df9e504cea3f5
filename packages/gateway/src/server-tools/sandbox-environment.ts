import { z } from 'zod'
import type { ToolCallContext } from './tool.js'

// Where `openrouter:bash` and `openrouter:shell` run, as an entry's `environment` says (the official
// client's ContainerAutoEnvironment and ContainerReferenceEnvironment): the request's sandbox (or
// its session's), or a named container of the caller's workspace kept between requests
// (`container_reference`, its `container_id` as a result gave it or a fresh name); no network, or
// the hosts a `network_policy` allows (through the runtime host's egress proxy: ports 80 and 443 by
// default, no secrets). A sandbox's network is fixed when it is made. `file_ids` are not served yet.

const Host = z
  .string()
  .max(253)
  .regex(/^[a-z0-9*](?:[a-z0-9*.-]{0,251}[a-z0-9*])?$/, 'a lowercase hostname, or a pattern with *')
const NetworkPolicy = z.discriminatedUnion('type', [
  z.object({ type: z.literal('disabled') }),
  z.object({ type: z.literal('allowlist'), allowed_domains: z.array(Host).min(1).max(50) }),
])
const NoFiles = z
  .array(z.string())
  .max(0, 'is not served by this Roster yet (attach files with openrouter:files)')
  .optional()
export const ContainerId = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,40}$/, 'letters, digits, underscores and hyphens, at most 40')

export const SandboxEnvironment = z.discriminatedUnion('type', [
  z.object({ type: z.literal('container_auto'), network_policy: NetworkPolicy.optional(), file_ids: NoFiles }),
  z.object({
    type: z.literal('container_reference'),
    container_id: ContainerId,
    network_policy: NetworkPolicy.optional(),
    file_ids: NoFiles,
  }),
])
export type SandboxEnvironment = z.infer<typeof SandboxEnvironment>

/** Where a call runs: its sandbox's key, the container id a result may name, and its network. */
export function sandboxOf(
  environment: SandboxEnvironment | undefined,
  sandbox: NonNullable<ToolCallContext['sandbox']>,
): { key: string; containerId?: string; network?: { allowedDomains: string[] } } {
  const policy = environment?.network_policy
  const network = policy?.type === 'allowlist' ? { allowedDomains: policy.allowed_domains } : undefined
  if (environment?.type === 'container_reference')
    return { key: sandbox.keyOf(environment.container_id), containerId: environment.container_id, network }
  return { key: sandbox.key, ...(sandbox.containerId ? { containerId: sandbox.containerId } : {}), network }
}
