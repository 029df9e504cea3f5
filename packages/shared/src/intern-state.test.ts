import { describe, expect, it } from 'vitest'
import { canTransition, Transitions } from './intern-state.js'
import { InternStatus } from './contracts/interns.js'

describe('the intern state machine', () => {
  it('has a row for every status of the spec and targets only known statuses', () => {
    expect(Object.keys(Transitions).sort()).toEqual([...InternStatus.options].sort())
    for (const targets of Object.values(Transitions)) for (const t of targets) expect(InternStatus.options).toContain(t)
  })

  it('allows the provisioning path and refuses shortcuts', () => {
    expect(canTransition('queued', 'provisioning')).toBe(true)
    expect(canTransition('provisioning', 'provisioning')).toBe(true)
    expect(canTransition('provisioning', 'running')).toBe(true)
    expect(canTransition('provisioning', 'failed')).toBe(true)
    expect(canTransition('stopped', 'running')).toBe(false)
    expect(canTransition('queued', 'running')).toBe(false)
    expect(canTransition('destroying', 'running')).toBe(false)
  })
})
