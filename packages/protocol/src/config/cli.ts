import { z } from 'zod'
import { masterKey, shared, fleetSettings } from './values.js'

// The admin CLI's settings (apps/cli).

export const CliConfig = z.object({
  DATABASE_URL: shared.DATABASE_URL,
  ...fleetSettings,
  VAULT_MASTER_KEY: masterKey.describe(
    "The API's key: `slack config-token set` seals a workspace's Slack configuration token with it.",
  ),
  SLACK_API_URL: shared.SLACK_API_URL,
})
export type CliConfig = z.infer<typeof CliConfig>
