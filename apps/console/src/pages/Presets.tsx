import { useQuery } from '@tanstack/react-query'
import { api } from '../api'
import { Disclosure } from '../disclosure'
import { href } from '../router'
import { Listed } from '../listed'

// The workspace's presets (GET /presets): each by its slug, when it last changed, and, opened, its
// versions (GET /presets/{slug}/versions) with each one's settings and system prompt; the
// designated one marked. Presets are made in the playground or through the API (docs/presets.md).

interface Preset {
  slug: string
  name: string
  updated_at: string
  designated_version_id: string | null
}
interface Version {
  id: string
  version: number
  config: Record<string, unknown>
  system_prompt: string | null
  created_at: string
}

export function Presets() {
  const presets = useQuery({ queryKey: ['presets'], queryFn: () => api<{ data: Preset[] }>('presets?limit=100') })
  return (
    <section aria-labelledby="presets-title">
      <h1 id="presets-title">Presets</h1>
      <p>
        A preset is a named, versioned set of request settings, used as <code>model: "@preset/slug"</code>. Make one in
        the <a href={href(['playground'])}>playground</a>.
      </p>
      <Listed
        title=""
        label="Presets"
        query={presets}
        empty="No presets yet: try a model and instructions in the playground, then save them as one."
        head={['Slug', 'Changed', 'Versions']}
        row={(p) => [
          <code>{p.slug}</code>,
          <time dateTime={p.updated_at}>{new Date(p.updated_at).toLocaleString()}</time>,
          <Disclosure
            summary="Versions"
            queryKey={['preset-versions', p.slug]}
            load={() => api<{ data: Version[] }>(`presets/${encodeURIComponent(p.slug)}/versions?limit=100`)}
            show={({ data }) => (
              <ol className="changes">
                {data.map((v) => (
                  <li key={v.id}>
                    version {v.version}
                    {v.id === p.designated_version_id ? ' (in use)' : ''}: <code>{JSON.stringify(v.config)}</code>
                    {v.system_prompt && <span className="muted"> · system prompt: {v.system_prompt}</span>}
                  </li>
                ))}
              </ol>
            )}
          />,
        ]}
      />
    </section>
  )
}

export default Presets
