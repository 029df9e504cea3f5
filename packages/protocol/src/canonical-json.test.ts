import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { canonicalJson } from './canonical-json.js'

describe('canonicalJson', () => {
  it('is independent of key order at every depth and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { y: 1, x: 2 }], c: undefined } })).toBe(
      '{"a":{"d":[2,{"x":2,"y":1}]},"b":1}',
    )
  })

  it('gives equal output for any permutation of an object’s keys', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (obj) => {
        const reversed = Object.fromEntries(Object.entries(obj).reverse())
        expect(canonicalJson(reversed)).toBe(canonicalJson(obj))
      }),
    )
  })
})
