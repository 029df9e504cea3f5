import { describe, expect, it } from 'vitest'
import { storableJson } from './storable-text.js'

describe('storableJson', () => {
  it('leaves JSON Postgres takes as JSON.stringify writes it, a surrogate pair included', () => {
    const value = { a: ['text', 'é 😀', 1, null, { b: true }], 'a \\u0000 written out': 'back\\slash' }
    expect(storableJson(value)).toBe(JSON.stringify(value))
  })

  it('writes a NUL or a lone surrogate, in a string or a key, at any depth, as U+FFFD', () => {
    const value = { 'k\0': [{ deep: ['x\uD800y', 'z\uDFFF'] }], ok: 'a\0b', n: 3 }
    const json = storableJson(value)
    expect(json).not.toMatch(/\\u(0000|d[89a-f])/i)
    expect(JSON.parse(json)).toEqual({ 'k\uFFFD': [{ deep: ['x\uFFFDy', 'z\uFFFD'] }], ok: 'a\uFFFDb', n: 3 })
  })
})
