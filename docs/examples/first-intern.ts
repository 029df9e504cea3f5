import { OpenRouter } from '@openrouter/sdk'

const client = new OpenRouter({
  apiKey: process.env.KEY!,
  serverURL: process.env.ROSTER_URL ?? 'http://127.0.0.1:3000/api/v1',
})
let intern = await client.interns.createIntern({ createInternRequest: { name: 'helper', provision: true } })
while (intern.status !== 'running') {
  await new Promise((resolve) => setTimeout(resolve, 500))
  intern = await client.interns.getIntern({ internId: intern.id })
}
const messages = [{ role: 'user' as const, content: 'Hello! What can you do?' }]
const chat = await client.interns.chat({ internId: intern.id, internChatCompletionRequest: { messages, stream: true } })
if (!(Symbol.asyncIterator in chat.result)) throw new Error('the prompt joined a turn already running')
for await (const chunk of chat.result) process.stdout.write(chunk.choices[0]?.delta.content ?? '')
