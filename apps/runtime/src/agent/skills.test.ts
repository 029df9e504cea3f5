import { describe, expect, it } from 'vitest'
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { skillsFingerprint, skillsFinder } from './skills.js'

// The fingerprint a turn's skills listing is kept by: it changes with whatever the listing reads,
// and says it cannot tell where a link is involved (the listing, in the sandbox, would follow it).
describe("the skills' fingerprint", () => {
  const workspace = () => mkdtempSync(join(tmpdir(), 'roster-skills-'))
  const skill = (ws: string, name: string, text: string) => {
    mkdirSync(join(ws, 'skills', name), { recursive: true })
    writeFileSync(join(ws, 'skills', name, 'SKILL.md'), text)
  }

  it('changes when a skill is added, rewritten (even at the same size) or removed, and not otherwise', async () => {
    const ws = workspace()
    expect(await skillsFingerprint(ws)).toBe('none')
    skill(ws, 'notes', '---\nname: notes\ndescription: a\n---\n')
    const one = await skillsFingerprint(ws)
    expect(one).toMatch(/notes\//)
    expect(await skillsFingerprint(ws)).toBe(one)
    // A file beside SKILL.md is not what the listing reads.
    writeFileSync(join(ws, 'skills', 'notes', 'template.md'), 'x')
    const beside = await skillsFingerprint(ws)
    writeFileSync(join(ws, 'skills', 'notes', 'SKILL.md'), '---\nname: notes\ndescription: b\n---\n')
    const rewritten = await skillsFingerprint(ws)
    expect(rewritten).not.toBe(beside)
    skill(ws, 'deploy', '---\nname: deploy\ndescription: c\n---\n')
    expect(await skillsFingerprint(ws)).not.toBe(rewritten)
  })

  it('lists afresh only when the fingerprint changed, and never without skills/', async () => {
    const ws = workspace()
    let listings = 0
    const find = skillsFinder(ws, async () => ({
      skills: [{ name: `n${++listings}`, description: 'd' }],
      problems: [],
    }))
    // No skills/ (most interns): nothing listed, no sandbox started.
    expect(await find()).toEqual({ skills: [], problems: [] })
    expect(listings).toBe(0)
    skill(ws, 'notes', '---\nname: notes\ndescription: a\n---\n')
    expect((await find()).skills[0]!.name).toBe('n1')
    expect((await find()).skills[0]!.name).toBe('n1')
    expect(listings).toBe(1)
    writeFileSync(join(ws, 'skills', 'notes', 'SKILL.md'), '---\nname: notes\ndescription: b\n---\n')
    expect((await find()).skills[0]!.name).toBe('n2')
    // A link among them: listed every time.
    symlinkSync(join(ws, 'skills', 'notes'), join(ws, 'skills', 'alias'))
    await find()
    await find()
    expect(listings).toBe(4)
  })

  it('cannot tell where a link is involved: skills/, a folder or a SKILL.md that is a link', async () => {
    const elsewhere = workspace()
    skill(elsewhere, 'x', 'secret')
    const linkedTop = workspace()
    symlinkSync(join(elsewhere, 'skills'), join(linkedTop, 'skills'))
    expect(await skillsFingerprint(linkedTop)).toBeUndefined()
    const linkedFolder = workspace()
    mkdirSync(join(linkedFolder, 'skills'))
    symlinkSync(join(elsewhere, 'skills', 'x'), join(linkedFolder, 'skills', 'x'))
    expect(await skillsFingerprint(linkedFolder)).toBeUndefined()
    const linkedFile = workspace()
    mkdirSync(join(linkedFile, 'skills', 'y'), { recursive: true })
    symlinkSync(join(elsewhere, 'skills', 'x', 'SKILL.md'), join(linkedFile, 'skills', 'y', 'SKILL.md'))
    expect(await skillsFingerprint(linkedFile)).toBeUndefined()
  })
})
