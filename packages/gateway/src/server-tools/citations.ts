import type { Emit } from '../items-in-progress.js'
import { isProviderItem, type OutputItem } from '../wire.js'
import { addAnnotation } from '../written-items.js'
import type { FoundSources } from './web-search.js'

// The answer's citations of what Roster's web search found: each place the final text names a
// source's URL becomes a `url_citation` on that span (the Responses wire's annotation, which the
// other doors carry as they carry a provider's citations). Only URLs a search returned are cited.

/** Annotates the messages of `output` from `from` on where they name a found source. */
export function citeSources(output: OutputItem[], from: number, sources: FoundSources, emit: Emit | undefined) {
  if (!sources.size) return
  for (let index = from; index < output.length; index++) {
    const item = output[index]!
    if (isProviderItem(item) || item.type !== 'message') continue
    item.content.forEach((part, content_index) => {
      if (part.type !== 'output_text') return
      for (const [url, found] of sources) {
        for (let at = part.text.indexOf(url); at !== -1; at = part.text.indexOf(url, at + url.length)) {
          const end = at + url.length
          // A longer URL that begins with this one is that URL, not this one.
          if (/[\w/?#=&%~+-]/.test(part.text[end] ?? '')) continue
          if (part.annotations.some((a) => a.url === url && a.start_index === at)) continue
          const annotation = { type: 'url_citation', url, title: found.title, start_index: at, end_index: end }
          addAnnotation(item, index, content_index, annotation, emit)
        }
      }
    })
  }
}
