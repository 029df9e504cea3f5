import { z } from 'zod'
import { describeIssues, invalid } from '../errors.js'
import { inputItems, isMessage, type InputItem, type ResponsesRequest } from '../request.js'
import type { Plugin } from './plugin.js'

// `file-parser`: the files a request's messages carry (`input_file` parts, their bytes inline as
// `file_data`) read into text the model can take, whatever its provider: a PDF's text extracted
// (engine `pdf-text`, with unpdf, Mozilla's PDF.js packaged for servers), a text file (plain,
// Markdown, CSV, JSON, XML, HTML) as it is. Each file becomes a text part naming it. A file of
// another kind, one given by URL or id, one past the limits, or one that cannot be read is a 400
// naming it; nothing reaches a model half read.

const Parameters = z.object({
  pdf: z.object({ engine: z.string().max(32).optional() }).optional(),
})

/** Most pages of one PDF, and most characters of text one file may give. */
const MAX_PAGES = 500
const MAX_CHARS = 2_000_000
const TEXT_TYPES = /^(text\/|application\/(json|xml|csv|x-ndjson|yaml|x-yaml|markdown))/

export const fileParser: Plugin<z.infer<typeof Parameters>> = { id: 'file-parser', parameters: Parameters }

/** Whether a request asks for its files to be read (an enabled file-parser entry). */
export const parsesFiles = (req: ResponsesRequest) =>
  req.plugins?.some((p) => p.id === 'file-parser' && p.enabled !== false) ?? false

/** The bytes of a `file_data` (a data: URL or bare base64) and its media type, if it says. */
function bytesOf(data: string): { bytes: Buffer; type?: string } {
  const url = /^data:([^;,]*)(;base64)?,/.exec(data)
  if (!url) return { bytes: Buffer.from(data, 'base64') }
  const body = data.slice(url[0].length)
  return {
    bytes: url[2] ? Buffer.from(body, 'base64') : Buffer.from(decodeURIComponent(body)),
    type: url[1] || undefined,
  }
}

async function pdfText(bytes: Buffer, name: string, where: string): Promise<string> {
  const { extractText, getDocumentProxy } = await import('unpdf')
  let pdf: Awaited<ReturnType<typeof getDocumentProxy>>
  try {
    pdf = await getDocumentProxy(new Uint8Array(bytes))
  } catch (err) {
    throw invalid(`${where} the file ${name} is not a PDF that can be read (${(err as Error).message})`)
  }
  try {
    if (pdf.numPages > MAX_PAGES)
      throw invalid(`${where} the file ${name} has ${pdf.numPages} pages; at most ${MAX_PAGES} are read`)
    return (await extractText(pdf, { mergePages: true })).text
  } finally {
    // The document and its worker's state go with it (a server reads many).
    await pdf.loadingTask.destroy()
  }
}

/** One file part as the text part it reads as. */
async function readFile(part: Record<string, unknown>, where: string): Promise<Record<string, unknown>> {
  const name = typeof part.filename === 'string' && part.filename ? part.filename.slice(0, 200) : 'file'
  if (typeof part.file_data !== 'string' || !part.file_data)
    throw invalid(
      `${where} the file ${name} needs file_data (its bytes, base64 or a data: URL): files by URL or id are not read here`,
    )
  const { bytes, type } = bytesOf(part.file_data)
  const pdf = type === 'application/pdf' || bytes.subarray(0, 5).toString('latin1') === '%PDF-' || /\.pdf$/i.test(name)
  let text: string
  if (pdf) text = await pdfText(bytes, name, where)
  else if ((type && TEXT_TYPES.test(type)) || (!type && /\.(txt|md|csv|json|xml|html?|ya?ml|log)$/i.test(name)))
    text = bytes.toString('utf8')
  else
    throw invalid(
      `${where} the file ${name} (${type ?? 'of no stated type'}) is of a kind file-parser does not read: PDFs and text files`,
    )
  if (text.length > MAX_CHARS)
    throw invalid(`${where} the file ${name} reads as more than ${MAX_CHARS} characters of text`)
  return { type: 'input_text', text: `[${name}]\n${text}` }
}

/** The request with every file its messages carry read into text (a new request; the given one untouched). */
export async function withFilesRead(req: ResponsesRequest): Promise<ResponsesRequest> {
  const entry = req.plugins?.find((p) => p.id === 'file-parser' && p.enabled !== false)
  const parsed = Parameters.safeParse(entry ?? {})
  if (!parsed.success) throw invalid(`/plugins file-parser: ${describeIssues(parsed.error)}`)
  const engine = parsed.data.pdf?.engine ?? 'pdf-text'
  if (engine !== 'pdf-text')
    throw invalid(`/plugins file-parser: the PDF engine ${engine} is not served by this Roster; use pdf-text`)
  if (typeof req.input === 'string' || !req.input?.length) return req
  const items = inputItems(req.input)
  if (!items.some(hasFile)) return req
  const input: InputItem[] = []
  for (const [i, item] of items.entries()) {
    if (!hasFile(item) || !isMessage(item) || !Array.isArray(item.content)) {
      input.push(item)
      continue
    }
    const content = []
    for (const [j, part] of (item.content as Record<string, unknown>[]).entries())
      content.push(part?.type === 'input_file' ? await readFile(part, `/input/${i}/content/${j}`) : part)
    input.push({ ...item, content } as InputItem)
  }
  return { ...req, input }
}

const hasFile = (item: InputItem) =>
  isMessage(item) &&
  Array.isArray(item.content) &&
  item.content.some((p) => (p as { type?: unknown })?.type === 'input_file')
