import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { EventStreamDecoder } from '@roster/platform'
import { edited, memberSpans, setMembers, sseFrame } from './json-members.js'

// The scan that finds an object's members in its text, held to JSON.parse over any JSON a provider
// could send: any values (strings with quotes, backslashes and braces in them, nesting), any spacing.

/** Any JSON value; keys that collide with the ones looked for, nested, so the scan must keep to its level. */
const value = fc.letrec((tie) => ({
  any: fc.oneof(
    { depthSize: 'small' },
    fc.string(),
    fc.constantFrom('"', '\\', '{', '}', '[', ']', ',', ':', '\\"', '"id":"x"'),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('any'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('id', 'model', 'usage', 'a', 'é', 'k"q'), tie('any'), { maxKeys: 4 }),
  ),
})).any
const object = fc.dictionary(fc.constantFrom('id', 'model', 'usage', 'x', 'choices', 'ü', 'a\\b'), value, {
  maxKeys: 6,
})
/** JSON with spaces around every colon and comma (as some Python servers write it). */
const spaced = (v: unknown): string =>
  Array.isArray(v)
    ? `[ ${v.map(spaced).join(' , ')} ]`
    : v !== null && typeof v === 'object'
      ? `{ ${Object.entries(v)
          .map(([k, x]) => `${JSON.stringify(k)} : ${spaced(x)}`)
          .join(' , ')} }`
      : JSON.stringify(v)
/** The same object as different producers write it: compact, indented, spaced. */
const spacing = fc.constantFrom<(o: unknown) => string>(
  (o) => JSON.stringify(o),
  (o) => JSON.stringify(o, null, 2),
  spaced,
  (o) => ` \n${JSON.stringify(o, null, '\t')}\r\n`,
)

describe('memberSpans', () => {
  it('finds each member at its own level, as JSON.parse reads it', () => {
    fc.assert(
      fc.property(object, spacing, (o, write) => {
        const text = write(o)
        const spans = memberSpans(text, ['id', 'model', 'usage', 'ü', 'a\\b'])
        for (const key of ['id', 'model', 'usage', 'ü', 'a\\b']) {
          const span = spans.get(key)
          if (!(key in o)) expect(span).toBeUndefined()
          else expect(JSON.parse(text.slice(span![0], span![1]))).toEqual(JSON.parse(JSON.stringify(o[key])))
        }
        const whole = spans.get('')!
        expect(JSON.parse(text.slice(whole[0], whole[1]))).toEqual(JSON.parse(JSON.stringify(o)))
        // Stopping at the first of each key finds the same values (JSON.stringify writes each key once).
        const first = memberSpans(text, ['id', 'model'], 0, true)
        for (const key of ['id', 'model']) expect(first.get(key)).toEqual(spans.get(key))
      }),
    )
  })

  it('finds a nested object’s members from where it begins', () => {
    fc.assert(
      fc.property(object, object, spacing, (inner, outer, write) => {
        const text = write({ ...outer, message: inner })
        const at = memberSpans(text, ['message']).get('message')![0]
        const spans = memberSpans(text, ['id'], at)
        if ('id' in inner)
          expect(JSON.parse(text.slice(...spans.get('id')!))).toEqual(JSON.parse(JSON.stringify(inner.id)))
        else expect(spans.get('id')).toBeUndefined()
      }),
    )
  })
})

describe('setMembers', () => {
  it('replaces the members an object has and adds those it has not, leaving every other byte as it was', () => {
    fc.assert(
      fc.property(object, spacing, value, value, (o, write, a, b) => {
        const text = write(o)
        const out = edited(text, setMembers(text, 0, { id: JSON.stringify(a), cost: JSON.stringify(b) }))
        // As JSON says the values (-0 is written 0).
        expect(JSON.parse(out)).toEqual(JSON.parse(JSON.stringify({ ...o, id: a, cost: b })))
        // Outside the values set, the text is the provider's.
        const untouched = memberSpans(text, ['id'])
        const before = untouched.get('id')
        if (before) expect(out.startsWith(text.slice(0, before[0]))).toBe(true)
      }),
    )
  })

  it('adds to an empty object without a stray comma', () => {
    expect(edited('{ }', setMembers('{ }', 0, { cost: '1' }))).toBe('{ "cost":1}')
    expect(edited('{}', setMembers('{}', 0, { a: '1', b: '2' }))).toBe('{"a":1,"b":2}')
  })
})

describe('sseFrame', () => {
  it('gives a client’s parser back the data a provider sent over several lines, and its event’s name', () => {
    fc.assert(
      fc.property(object, spacing, fc.option(fc.constantFrom('message_start', 'ping')), (o, write, name) => {
        const data = write(o).trim()
        const decoder = new EventStreamDecoder()
        const events = decoder.push(sseFrame(data, name ?? undefined))
        expect(events).toHaveLength(1)
        expect(events[0]!.data).toBe(data)
        expect(events[0]!.event).toBe(name ?? undefined)
        expect(JSON.parse(events[0]!.data)).toEqual(JSON.parse(JSON.stringify(o)))
      }),
    )
  })
})
