import { describe, expect, it } from 'vitest'
import { safeFileName } from './shared-files.js'

describe('a shared file’s name in the workspace', () => {
  it('stays one path segment: no separators, no leading dots, not empty, not too long', () => {
    expect(safeFileName('report.pdf')).toBe('report.pdf')
    expect(safeFileName('../../etc/passwd')).toBe('__.._etc_passwd')
    expect(safeFileName('a\\b\0c')).toBe('a_b_c')
    expect(safeFileName('.env')).toBe('_env')
    expect(safeFileName('   ')).toBe('file')
    expect(safeFileName('x'.repeat(500))).toHaveLength(200)
  })
})
