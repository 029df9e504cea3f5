import { useState } from 'react'
import { TableScroll } from '../listed'
import { useQuery } from '@tanstack/react-query'
import { api } from '../api'
import { Disclosure } from '../disclosure'

// The catalogue this Roster serves (GET /models, any key): each model's context, prices per million
// tokens, what it takes and gives (tools, reasoning, images), and, opened, the provider endpoints
// that serve it (GET /models/{id}/endpoints) with each one's health: uptime and time to first token. Image models are listed with them (output_modalities=all).

interface Model {
  id: string
  name: string
  description: string
  context_length: number
  architecture: { input_modalities: string[]; output_modalities: string[] }
  pricing: { prompt: string; completion: string; request?: string; image?: string; web_search?: string }
  top_provider: { max_completion_tokens: number | null }
  supported_parameters: string[]
}
interface Endpoint {
  provider_name: string
  protocol: string
  tiers: string[]
  pricing: { prompt: string; completion: string }
  /** Percent of attempts that succeeded (null: no calls in the window). */
  uptime_last_30m: number | null
  uptime_last_1d: number | null
  /** Time to first token, ms. */
  latency_last_30m: { p50: number; p99: number } | null
}

/** An endpoint's health as people read it: its uptime and how soon it starts answering. */
function health(e: Endpoint): string {
  if (e.uptime_last_30m === null && e.uptime_last_1d === null) return 'no calls in the last day'
  const parts = [
    e.uptime_last_30m !== null ? `${e.uptime_last_30m}% up (30 min)` : undefined,
    e.uptime_last_1d !== null ? `${e.uptime_last_1d}% (day)` : undefined,
    e.latency_last_30m
      ? `first token ≤ ${e.latency_last_30m.p50} ms (p50), ≤ ${e.latency_last_30m.p99} ms (p99)`
      : undefined,
  ]
  return parts.filter(Boolean).join(', ')
}

/** Dollars per million tokens from a price per token, as people read model prices. */
const perMillion = (price: string) => {
  const n = Number(price) * 1_000_000
  return n === 0 ? 'free' : `$${n >= 1 ? n.toFixed(2) : n.toPrecision(2)}`
}

export default function Models() {
  const [filter, setFilter] = useState('')
  const models = useQuery({
    // Its own key: the other pages' ['models'] holds the text models only.
    queryKey: ['models', 'all'],
    queryFn: () => api<{ data: Model[] }>('models?output_modalities=all'),
  })
  const shown = (models.data?.data ?? []).filter((m) =>
    `${m.id} ${m.name}`.toLowerCase().includes(filter.trim().toLowerCase()),
  )
  return (
    <section aria-labelledby="models-title">
      <h1 id="models-title">Models</h1>
      <div className="filters">
        <label>
          Search by id or name{' '}
          <input type="search" value={filter} onChange={(e) => setFilter(e.target.value)} maxLength={100} />
        </label>
      </div>
      {models.isPending ? (
        <p aria-busy="true">Loading the catalogue…</p>
      ) : models.isError ? (
        <p role="alert">{models.error.message}</p>
      ) : shown.length === 0 ? (
        <p>
          {filter
            ? `No model’s id or name holds “${filter}”.`
            : 'This Roster serves no model yet: give it a provider key or a MODEL_CATALOGUE (docs/gateway.md).'}
        </p>
      ) : (
        <TableScroll label="Models">
          <table>
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Context</th>
                <th scope="col">Input / output per million tokens</th>
                <th scope="col">Takes and gives</th>
                <th scope="col">Endpoints</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((m) => (
                <tr key={m.id}>
                  <td>
                    <code>{m.id}</code>
                    <br />
                    <span className="muted">{m.name}</span>
                  </td>
                  <td>
                    {m.context_length.toLocaleString()}
                    {m.top_provider.max_completion_tokens
                      ? ` (out ${m.top_provider.max_completion_tokens.toLocaleString()})`
                      : ''}
                  </td>
                  <td>
                    {perMillion(m.pricing.prompt)} / {perMillion(m.pricing.completion)}
                  </td>
                  <td>{capabilities(m)}</td>
                  <td>
                    <Endpoints id={m.id} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
    </section>
  )
}

function capabilities(m: Model): string {
  const parts = [
    `${m.architecture.input_modalities.join(' + ')} → ${m.architecture.output_modalities.join(' + ')}`,
    ...(m.supported_parameters.includes('tools') ? ['tools'] : []),
    ...(m.supported_parameters.includes('reasoning') ? ['reasoning'] : []),
  ]
  return parts.join(', ')
}

/** A model's provider endpoints, read when opened. */
function Endpoints({ id }: { id: string }) {
  return (
    <Disclosure
      summary="Providers"
      queryKey={['model-endpoints', id]}
      load={() => api<{ data: { endpoints: Endpoint[] } }>(`models/${id}/endpoints`)}
      show={({ data }) => (
        <ul>
          {data.endpoints.map((e, n) => (
            <li key={n}>
              {e.provider_name} ({e.protocol}; {e.tiers.join(', ')}): {perMillion(e.pricing.prompt)} /{' '}
              {perMillion(e.pricing.completion)}
              <br />
              <span className={e.uptime_last_30m !== null && e.uptime_last_30m < 90 ? 'failing' : 'muted'}>
                {health(e)}
              </span>
            </li>
          ))}
        </ul>
      )}
    />
  )
}
