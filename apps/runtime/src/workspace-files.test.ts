import { beforeAll, describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { lacking } from '@roster/testing'
import {
  listWorkspaceFiles,
  readWorkspaceFile,
  workspacePath,
  writeWorkspaceFile,
  WorkspacePathError,
} from './workspace-files.js'

// The file tools on real workspaces, through the intern's own sandbox.
const noSandbox = await lacking(['bubblewrap'], 'the file tools in their sandbox')

const root = mkdtempSync(join(tmpdir(), 'roster-files-'))
const mine = join(root, 'a')
const theirs = join(root, 'b')
const limits = { timeoutMs: 10_000, maxBytes: 1000 }

beforeAll(() => {
  mkdirSync(mine)
  mkdirSync(theirs)
  writeFileSync(join(theirs, 'secret.txt'), 'not yours')
  // Links an intern could make with its shell: out of the workspace by the host's paths.
  symlinkSync(join(theirs, 'secret.txt'), join(mine, 'link-to-theirs'))
  symlinkSync(theirs, join(mine, 'dir-link'))
})

describe('the file tools', () => {
  it.skipIf(noSandbox)('write, read back and list within the workspace, making directories', async () => {
    expect(await writeWorkspaceFile(mine, 'notes/today.md', 'héllo\nworld', limits)).toEqual({
      path: '/workspace/notes/today.md',
      bytes: 12,
    })
    expect(readFileSync(join(mine, 'notes/today.md'), 'utf8')).toBe('héllo\nworld')
    expect(await readWorkspaceFile(mine, '/workspace/notes/today.md', limits)).toEqual({
      path: '/workspace/notes/today.md',
      content: 'héllo\nworld',
      truncated: false,
    })
    await writeWorkspaceFile(mine, 'notes/with space.txt', '', limits)
    const listing = await listWorkspaceFiles(mine, 'notes', 1, limits)
    expect(listing.entries).toEqual([
      { path: '/workspace/notes/today.md', type: 'file', bytes: 12 },
      { path: '/workspace/notes/with space.txt', type: 'file', bytes: 0 },
    ])
    const top = await listWorkspaceFiles(mine, '.', 2, limits)
    expect(top.entries.map((e) => [e.path, e.type])).toEqual(
      expect.arrayContaining([
        ['/workspace/notes', 'directory'],
        ['/workspace/link-to-theirs', 'link'],
      ]),
    )
  })

  it.skipIf(noSandbox)('keep to the limits: a long file is cut, a large write refused', async () => {
    await writeWorkspaceFile(mine, 'big.txt', 'x'.repeat(1000), limits)
    writeFileSync(join(mine, 'bigger.txt'), 'y'.repeat(5000))
    expect(await readWorkspaceFile(mine, 'bigger.txt', limits)).toMatchObject({
      truncated: true,
      content: 'y'.repeat(1000),
    })
    expect((await readWorkspaceFile(mine, 'big.txt', limits)).truncated).toBe(false)
    await expect(writeWorkspaceFile(mine, 'huge.txt', 'z'.repeat(1001), limits)).rejects.toThrow(/more than the 1000/)
  })

  it.skipIf(noSandbox)('never leave the workspace: not by path, not through a link the intern made', async () => {
    for (const path of [
      '../b/secret.txt',
      '/etc/passwd',
      '/workspace/../etc/passwd',
      `${theirs}/secret.txt`,
      '',
      'a\0b',
    ]) {
      await expect(readWorkspaceFile(mine, path, limits), JSON.stringify(path)).rejects.toThrow(WorkspacePathError)
    }
    // The links point at the other intern's files by the host's paths, which the sandbox does not have.
    await expect(readWorkspaceFile(mine, 'link-to-theirs', limits)).rejects.toThrow(/not a file/)
    await expect(listWorkspaceFiles(mine, 'dir-link', 1, limits)).rejects.toThrow(/not a directory/)
    await expect(writeWorkspaceFile(mine, 'dir-link/planted.txt', 'x', limits)).rejects.toThrow(WorkspacePathError)
    expect(() => readFileSync(join(theirs, 'planted.txt'))).toThrow()
    expect(readFileSync(join(theirs, 'secret.txt'), 'utf8')).toBe('not yours')
    await expect(readWorkspaceFile(mine, 'missing.txt', limits)).rejects.toThrow(/not a file/)
  })

  it('resolve any path to the workspace or refuse it', () => {
    fc.assert(
      fc.property(
        fc
          .array(fc.constantFrom('..', '.', 'a', 'b c', '', '/workspace', 'x..y'), { maxLength: 6 })
          .map((parts) => parts.join('/')),
        (path) => {
          try {
            const resolved = workspacePath(path)
            expect(resolved === '/workspace' || resolved.startsWith('/workspace/')).toBe(true)
            expect(resolved.split('/')).not.toContain('..')
          } catch (err) {
            expect(err).toBeInstanceOf(WorkspacePathError)
          }
        },
      ),
    )
  })
})
