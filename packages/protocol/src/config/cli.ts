import { z } from 'zod'
import { masterKey, shared, fleetSettings, backgroundTurnSettings } from './values.js'

// The admin CLI's settings (apps/cli).

export const CliConfig = z.object({
  DATABASE_URL: shared.DATABASE_URL,
  ...fleetSettings,
  INTERN_TURN_QUEUE: backgroundTurnSettings.INTERN_TURN_QUEUE,
  PUBLIC_URL: z
    .url()
    .transform((u) => u.replace(/\/+$/, ''))
    .optional()
    .describe(
      "The API's `PUBLIC_URL`: the webhook triggers' URLs the CLI shows start with it (unset: http://localhost:3000).",
    ),
  VAULT_MASTER_KEY: masterKey.describe(
    "The API's key: `slack config-token set` seals a workspace's Slack configuration token with it, `triggers create` a trigger's secret.",
  ),
  SLACK_API_URL: shared.SLACK_API_URL,
})
export type CliConfig = z.infer<typeof CliConfig>
