import { datetime } from './datetime.js'
import { searchModels } from './search-models.js'
import { keyedBackends, searchBackends, type SearchBackendOptions } from './search-backends.js'
import type { ServerToolKind, ServerToolType } from './tool.js'
import { webFetch, type WebFetchOptions } from './web-fetch.js'
import { webSearch } from './web-search.js'
import { toolSearch } from './tool-search.js'
import { advisor, subagent } from './consultants.js'
import { bash } from './bash.js'
import { shell } from './shell.js'
import { fusion } from './fusion.js'
import { applyPatch } from './apply-patch.js'
import { imageGeneration } from './image-generation.js'
import { files } from './files.js'

export type {
  Consultation,
  Consulted,
  ServerTool,
  ServerToolKind,
  ServerToolType,
  OfferContext,
  SandboxPort,
  SandboxResult,
  ToolCallContext,
  GeneratedImage,
} from './tool.js'
export type { WebFetchOptions } from './web-fetch.js'
export type { FilesPort, FileRecord } from './tool.js'
export { FILE_ID } from './files.js'
export type { SearchBackendOptions } from './search-backends.js'
export { guardedLookup, isForbiddenAddress, readCapped, refusedLiteral } from './network-guard.js'
export { citeSources } from './citations.js'
export { FusionParameters, panelOf, type FusionResult } from './fusion.js'
export { readParameters } from './tool.js'
export type { DeferredTools } from './tool.js'
export { allowsNative, sourcesOf, wantsNative, WebSearchParameters } from './web-search.js'

/** What the server tools are configured with (the API's settings). */
export interface ServerToolOptions {
  webFetch: WebFetchOptions
  search: SearchBackendOptions
}

/** The server tools this Roster serves, by the type a request names them by: the one table. */
export function serverToolKinds(options: ServerToolOptions): Map<ServerToolType, ServerToolKind> {
  const kinds: ServerToolKind[] = [
    datetime,
    webFetch(options.webFetch),
    webSearch(searchBackends(options.search), keyedBackends(options.search)),
    searchModels,
    toolSearch,
    advisor,
    subagent,
    bash,
    shell,
    fusion,
    applyPatch,
    imageGeneration,
    files,
  ]
  return new Map(kinds.map((k) => [k.type, k]))
}
