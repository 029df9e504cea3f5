import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OpenRouter } from '@openrouter/sdk'
import OpenAI from 'openai'
import { containerTestsProblem } from '@roster/testing'
import { startRoster, type StartedRoster } from '../src/index.js'
import { buildImage, CONTAINER_TEST_IMAGES } from './image.js'

// The example suite of docs/containers.md, run as written: docs-example.test.ts checks
// that the page shows exactly the lines between the markers.
const problem = await containerTestsProblem(CONTAINER_TEST_IMAGES)
if (problem) console.warn(`the testcontainers example of docs/containers.md cannot run here: ${problem}`)

describe.skipIf(problem)('the testcontainers example of docs/containers.md', () => {
  beforeAll(() => buildImage(), 900_000)
  // docs example: begin
  let roster: StartedRoster
  beforeAll(async () => {
    roster = await startRoster()
  }, 300_000) // image: ROSTER_IMAGE or roster:local
  afterAll(() => roster.stop())

  it('creates an intern, and the gateway answers', async () => {
    const client = new OpenRouter({ apiKey: roster.keys.user, serverURL: roster.baseUrl })
    const intern = await client.interns.createIntern({ createInternRequest: { name: 'helper', provision: true } })
    expect(intern.status).toBe('queued') // poll getIntern until 'running'
    const openai = new OpenAI({ apiKey: roster.keys.user, baseURL: roster.baseUrl })
    const response = await openai.responses.create({ model: 'roster-sim/chat', input: 'Say hello.' })
    expect(response.status).toBe('completed')
  })
  // docs example: end
})
