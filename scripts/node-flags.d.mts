/** Node flags for Roster's long-running processes (see node-flags.mjs for why each one). */
export function nodeFlags(env?: Record<string, string | undefined>, cores?: number): string[]
