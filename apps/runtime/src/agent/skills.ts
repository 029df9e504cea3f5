import { randomBytes } from 'node:crypto'
import { lstat, readdir } from 'node:fs/promises'
import { join, posix } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { runSandboxed } from '../sandbox.js'
import { listWorkspaceFiles, readWorkspaceFile, writeWorkspaceFile, WorkspacePathError } from '../workspace-files.js'
import type { ExtraTools, Json } from './agent-setup.js'

// An intern's skills (issue 61): folders under skills/ in its workspace in the Agent Skills layout
// (agentskills.io): a SKILL.md whose front matter gives the skill's name (its folder's) and a
// description of when to use it, then its instructions, beside the files it uses (scripts,
// references, assets). A turn is offered them by name and description only, in one tool,
// use_skill, whose answer is the skill's SKILL.md in full and the list of its files: the rest is
// read only when used. Installed through the API (a folder at once: written aside, then moved in)
// or by the intern itself (it writes the folder; its next turn finds it). Everything here reads and
// writes in the intern's sandbox, as its file tools do: a link in the workspace leads nowhere else.
// A turn's listing is kept while what it read is unchanged (looked at from the host without
// following any link: a folder or SKILL.md that is a link is listed afresh every turn).

export const SKILLS_DIR = 'skills'
/** A skill's name, as the layout gives it: lowercase letters, digits and single hyphens, at most 64. */
export const SKILL_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/
const NAME_MAX = 64
const DESCRIPTION_MAX = 1_024
/** Skills a turn is offered at most (the tool's description names each). */
const SKILLS_OFFERED = 100
/** How much of a SKILL.md is read for its front matter. */
const FRONT_MATTER_BYTES = 8 * 1024

export interface Skill {
  name: string
  description: string
}

/** A SKILL.md's name and description, or why it is not one. */
export function readSkillFile(text: string, folder: string): Skill | { problem: string } {
  const m = /^---\r?\n([\s\S]*?)\r?\n---(\r?\n|$)/.exec(text)
  if (!m) return { problem: 'SKILL.md must begin with a front matter (--- name: … description: … ---)' }
  let meta: unknown
  try {
    meta = parseYaml(m[1]!)
  } catch (err) {
    return { problem: `its front matter is not YAML: ${(err as Error).message.split('\n')[0]}` }
  }
  const { name, description } = (meta && typeof meta === 'object' ? meta : {}) as Record<string, unknown>
  if (typeof name !== 'string' || !SKILL_NAME.test(name) || name.length > NAME_MAX)
    return { problem: 'its name must be lowercase letters, digits and single hyphens, at most 64' }
  if (name !== folder) return { problem: `its name (${name}) must be its folder's (${folder})` }
  if (typeof description !== 'string' || !description.trim())
    return { problem: 'it needs a description: what it does and when to use it' }
  if (description.length > DESCRIPTION_MAX) return { problem: `its description is over ${DESCRIPTION_MAX} characters` }
  return { name, description: description.trim() }
}

/** Folders of skills/ looked at for the fingerprint at most; past it, the skills are listed every turn. */
const FINGERPRINT_FOLDERS = 500

/**
 * What the skills' listing depends on, read from the host without following links (lstat,
 * readdir): skills/ and each folder's SKILL.md, by inode, change time and size. Undefined where it
 * cannot tell (a link among them, too many folders): the caller lists them then.
 */
export async function skillsFingerprint(workspace: string): Promise<string | undefined> {
  const stamp = (st: { ino: bigint; ctimeNs: bigint; mtimeNs: bigint; size: bigint }) =>
    `${st.ino}:${st.ctimeNs}:${st.mtimeNs}:${st.size}`
  const dir = join(workspace, SKILLS_DIR)
  const top = await lstat(dir, { bigint: true }).catch(() => undefined)
  if (!top) return 'none'
  if (!top.isDirectory()) return top.isSymbolicLink() ? undefined : 'none'
  const entries = await readdir(dir, { withFileTypes: true })
  if (entries.length > FINGERPRINT_FOLDERS) return undefined
  const parts = [stamp(top)]
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (e.isSymbolicLink()) return undefined
    if (!e.isDirectory()) continue
    const file = await lstat(join(dir, e.name, 'SKILL.md'), { bigint: true }).catch(() => undefined)
    if (file?.isSymbolicLink()) return undefined
    const folder = await lstat(join(dir, e.name), { bigint: true })
    parts.push(`${e.name}/${stamp(folder)}/${file ? stamp(file) : '-'}`)
  }
  return parts.join('|')
}

/** A finder of the workspace's skills that lists them afresh only when their fingerprint changed. */
export function skillsFinder(
  workspace: string,
  list: typeof findSkills = findSkills,
): () => Promise<Awaited<ReturnType<typeof findSkills>>> {
  let last: { print: string; found: Awaited<ReturnType<typeof findSkills>> } | undefined
  return async () => {
    // Read before the listing: a change meanwhile leaves a stale fingerprint, listed again next time.
    const print = await skillsFingerprint(workspace).catch(() => undefined)
    // No skills/ at all (most interns): nothing to list, no sandbox started.
    if (print === 'none') return { skills: [], problems: [] }
    if (print !== undefined && last?.print === print) return last.found
    const found = await list(workspace)
    last = print === undefined ? undefined : { print, found }
    return found
  }
}

/** The skills in the workspace, and the folders that are not skills (with why). */
export async function findSkills(
  workspace: string,
): Promise<{ skills: Skill[]; problems: { folder: string; problem: string }[] }> {
  const res = await runSandboxed(
    `cd /workspace/${SKILLS_DIR} 2>/dev/null || exit 0
     for d in */; do d=\${d%/}; [ -f "$d/SKILL.md" ] || continue; printf '%s\\0' "$d"; head -c ${FRONT_MATTER_BYTES} -- "$d/SKILL.md" | tr -d '\\0'; printf '\\0'; done`,
    { workspace, timeoutMs: 10_000, maxOutputBytes: 2 * 1024 * 1024 },
  )
  const parts = res.stdout.split('\0')
  const skills: Skill[] = []
  const problems: { folder: string; problem: string }[] = []
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const folder = parts[i]!
    const read = readSkillFile(parts[i + 1]!, folder)
    if ('problem' in read) problems.push({ folder, problem: read.problem })
    else skills.push(read)
  }
  skills.sort((a, b) => a.name.localeCompare(b.name))
  return { skills: skills.slice(0, SKILLS_OFFERED), problems }
}

/** The use_skill tool for a turn: its description names each skill; its answer is the skill in full. */
export function skillTools(workspace: string, skills: Skill[]): ExtraTools {
  const listed = skills.length
    ? skills.map((s) => `- ${s.name}: ${s.description.replace(/\s+/g, ' ')}`).join('\n')
    : '(none yet)'
  const definition: Json = {
    type: 'function',
    name: 'use_skill',
    description:
      `Read one of your skills in full before you do the kind of task it is for: its instructions (SKILL.md) and the list of its files, which you then read or run as it says. Your skills:\n${listed}\n` +
      `To make a new one, write ${SKILLS_DIR}/<name>/SKILL.md beginning with a front matter (---, name: <name>, description: what it does and when to use it, ---), then its instructions, beside the files it uses.`,
    parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  }
  return {
    definitions: [definition],
    run: (name, args) => {
      if (name !== 'use_skill') return undefined
      return (async () => {
        const skill = String(args.name ?? '')
        if (!SKILL_NAME.test(skill) || !skills.some((s) => s.name === skill))
          return JSON.stringify({
            error: `there is no skill ${skill}; yours: ${skills.map((s) => s.name).join(', ') || 'none'}`,
          })
        const dir = `${SKILLS_DIR}/${skill}`
        const md = await readWorkspaceFile(workspace, `${dir}/SKILL.md`, { timeoutMs: 10_000, maxBytes: 64 * 1024 })
        const files = await listWorkspaceFiles(workspace, dir, 4)
        return JSON.stringify({
          skill,
          folder: `/workspace/${dir}`,
          instructions: md.content,
          ...(md.truncated ? { truncated: true } : {}),
          files: files.entries.filter((e) => e.type === 'file').map((e) => e.path),
        })
      })()
    },
  }
}

/** A skill's file, as the API installs it: its path in the skill's folder and its bytes. */
export interface SkillFile {
  path: string
  bytes: Buffer
}

/**
 * Installs a skill's folder at once: checked (its SKILL.md read as a skill named `name`, its paths
 * inside the folder), written aside, then moved in place of any skill of that name.
 */
export async function installSkill(workspace: string, name: string, files: SkillFile[]): Promise<Skill> {
  if (!SKILL_NAME.test(name) || name.length > NAME_MAX) throw new WorkspacePathError(`${name} is not a skill's name`)
  const md = files.find((f) => f.path === 'SKILL.md')
  if (!md) throw new WorkspacePathError('a skill needs its SKILL.md')
  const skill = readSkillFile(md.bytes.toString('utf8'), name)
  if ('problem' in skill) throw new WorkspacePathError(`SKILL.md: ${skill.problem}`)
  for (const f of files) {
    const clean = posix.normalize(f.path)
    if (!f.path || f.path !== clean || clean.startsWith('../') || clean === '..' || posix.isAbsolute(clean))
      throw new WorkspacePathError(`${f.path}: a path inside the skill's folder, without . or .. parts`)
  }
  const aside = `.skills-incoming/${name}-${randomBytes(6).toString('hex')}`
  for (const f of files)
    await writeWorkspaceFile(workspace, `${aside}/${f.path}`, f.bytes, {
      timeoutMs: 10_000,
      maxBytes: 16 * 1024 * 1024,
    })
  const moved = await runSandboxed(
    'mkdir -p /workspace/skills && rm -rf -- "/workspace/skills/$1" && mv -- "/workspace/$2" "/workspace/skills/$1" && rmdir /workspace/.skills-incoming 2>/dev/null; exit 0',
    { workspace, timeoutMs: 10_000, maxOutputBytes: 4096, args: [name, aside] },
  )
  if (moved.exitCode !== 0) throw new WorkspacePathError(`the skill could not be put in place: ${moved.stderr.trim()}`)
  return skill
}

/** Removes a skill's folder; false when there was none. */
export async function removeSkill(workspace: string, name: string): Promise<boolean> {
  if (!SKILL_NAME.test(name)) return false
  const res = await runSandboxed('test -d "/workspace/skills/$1" || exit 3; rm -rf -- "/workspace/skills/$1"', {
    workspace,
    timeoutMs: 10_000,
    maxOutputBytes: 4096,
    args: [name],
  })
  return res.exitCode === 0
}

/** Tools of several sources as one (the first that knows a name runs it). */
export function joinTools(...sources: (ExtraTools | undefined)[]): ExtraTools | undefined {
  const present = sources.filter((s): s is ExtraTools => !!s)
  if (!present.length) return undefined
  return {
    definitions: present.flatMap((s) => s.definitions),
    run: (name, args, permit, signal) => {
      for (const s of present) {
        const ran = s.run(name, args, permit, signal)
        if (ran) return ran
      }
      return undefined
    },
  }
}
