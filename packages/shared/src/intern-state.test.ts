import { describe, expect, it } from 'vitest'
import { canTransition, inGroup, StatusGroups, Transitions } from './intern-state.js'
import { InternStatus } from '@roster/protocol'

describe('the intern state machine', () => {
  it('has a row for every status of the spec and targets only known statuses', () => {
    expect(Object.keys(Transitions).sort()).toEqual([...InternStatus.options].sort())
    for (const targets of Object.values(Transitions)) for (const t of targets) expect(InternStatus.options).toContain(t)
  })

  it('names its groups of statuses once, each of known statuses, and answers membership by them', () => {
    for (const group of Object.values(StatusGroups))
      for (const status of group) expect(InternStatus.options).toContain(status)
    // A host holds what it provisions, runs or tears down; the moves the fleet makes follow from it.
    expect(StatusGroups.onHost.every((s) => inGroup('heldByHost', s))).toBe(true)
    expect(StatusGroups.provisioningRun.every((s) => inGroup('placedOrPlacing', s))).toBe(true)
    expect(inGroup('deleting', 'destroy_failed')).toBe(true)
    expect(inGroup('deleting', 'stopped')).toBe(false)
    // Every status a host holds may be moved off it (queued again) or deleted.
    for (const s of StatusGroups.onHost) expect(canTransition(s, 'queued')).toBe(true)
  })

  it('allows every change the lifecycle operations make from the statuses they accept', () => {
    const nonDeleting = InternStatus.options.filter((s) => !inGroup('deleting', s))
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
