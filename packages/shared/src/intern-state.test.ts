import { describe, expect, it } from 'vitest'
import { canTransition, Transitions } from './intern-state.js'
import { InternStatus } from '@roster/protocol'

describe('the intern state machine', () => {
  it('has a row for every status of the spec and targets only known statuses', () => {
    expect(Object.keys(Transitions).sort()).toEqual([...InternStatus.options].sort())
    for (const targets of Object.values(Transitions)) for (const t of targets) expect(InternStatus.options).toContain(t)
  })

  it('allows every change the lifecycle operations make from the statuses they accept', () => {
    const nonDeleting = InternStatus.options.filter((s) => s !== 'destroying' && s !== 'destroy_failed')
    // suspend: any status but stopped and the deleting ones
    for (const from of nonDeleting.filter((s) => s !== 'stopped')) expect(canTransition(from, 'stopped')).toBe(true)
    // provision: stopped, failed, awaiting_slack_install
    for (const from of ['stopped', 'failed', 'awaiting_slack_install'] as const)
      expect(canTransition(from, 'queued')).toBe(true)
    // delete: anything but destroying itself
    for (const from of InternStatus.options.filter((s) => s !== 'destroying'))
      expect(canTransition(from, 'destroying')).toBe(true)
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
