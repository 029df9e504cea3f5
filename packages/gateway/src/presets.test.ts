import { describe, expect, it } from 'vitest'
import { ResponsesRequest } from './request.js'
import { applyPreset, PresetSlug, presetFromResponses, presetReference } from './presets.js'

const version = {
  config: {
    model: 'a/one',
    temperature: 0.2,
    service_tier: 'priority',
    tools: [{ type: 'function', name: 'f', parameters: {} }],
  },
  systemPrompt: 'be terse',
}
const req = (body: object) => ResponsesRequest.parse(body)

describe('presets', () => {
  it('finds the preset a request names, three ways', () => {
    expect(presetReference({ model: '@preset/x' })).toEqual({ slug: 'x' })
    expect(presetReference({ model: 'a/two@preset/x' })).toEqual({ slug: 'x', model: 'a/two' })
    expect(presetReference({ preset: 'x', model: 'a/two' })).toEqual({ slug: 'x' })
    expect(presetReference({ model: 'a/two' })).toBeUndefined()
  })

  it('merges: preset fields are defaults, request fields win whole, the official client’s service_tier auto does not', () => {
    const merged = applyPreset(req({ model: '@preset/x', input: 'hi', service_tier: 'auto', tools: [] }), version)
    expect(merged).toMatchObject({
      model: 'a/one',
      temperature: 0.2,
      service_tier: 'priority',
      tools: [],
      instructions: 'be terse',
      input: 'hi',
    })
    expect(applyPreset(req({ preset: 'x', models: ['a/two'], instructions: 'mine' }), version)).toMatchObject({
      models: ['a/two'],
      instructions: 'mine',
    })
    expect(applyPreset(req({ preset: 'x', models: ['a/two'] }), version).model).toBeUndefined()
    expect(applyPreset(req({ model: 'a/three@preset/x', temperature: 1 }), version)).toMatchObject({
      model: 'a/three',
      temperature: 1,
    })
  })

  it('keeps only configuration, validated with the request’s limits', () => {
    const { config, systemPrompt } = presetFromResponses({
      model: 'a/one',
      input: 'x',
      stream: true,
      store: false,
      prompt: { id: 'p' },
      messages: [],
      instructions: 'sys',
      stop: ['a'],
    })
    expect(config).toEqual({ model: 'a/one', stop: ['a'] })
    expect(systemPrompt).toBe('sys')
    expect(() => presetFromResponses({ stop: ['a', 'b', 'c', 'd', 'e'] })).toThrow(/stop/)
    expect(() => presetFromResponses([])).toThrow(/object/)
  })

  it('slugs: 1–64 of a–z 0–9 - _ ., starting and ending alphanumeric', () => {
    for (const ok of ['a', 'support-bot', 'v1.2_x', 'a'.repeat(64)])
      expect(PresetSlug.safeParse(ok).success, ok).toBe(true)
    for (const bad of ['', 'A', '-a', 'a-', 'a b', 'a/b', 'a'.repeat(65)])
      expect(PresetSlug.safeParse(bad).success, bad).toBe(false)
  })
})
