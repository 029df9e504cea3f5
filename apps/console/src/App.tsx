import { lazy, Suspense, useEffect, useState, type FormEvent } from 'react'
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { api, apiBase, ApiError, SESSION_ENDED, type Session } from './api'
import { href, useRoute, type Route } from './router'
import { Interns } from './pages/Interns'
import { Intern } from './pages/Intern'
import { Keys } from './pages/Keys'
import { DryRun } from './pages/DryRun'
import { Generations } from './pages/Generations'
import { Governance, WorkspacePage } from './pages/Governance'
import { Fleet } from './pages/Fleet'

// The chat (with its Markdown renderer) loads when first opened, not with the console.
const Chat = lazy(() => import('./pages/Chat'))
const Inbox = lazy(() => import('./pages/Inbox'))
// The spend page brings its chart library with it.
const Spend = lazy(() => import('./pages/Spend'))
const Models = lazy(() => import('./pages/Models'))
const AuditLog = lazy(() => import('./pages/AuditLog'))
// The playground streams model calls side by side.
const Playground = lazy(() => import('./pages/Playground'))
const Presets = lazy(() => import('./pages/Presets'))

// The console's shell: sign in with an API key (exchanged for a session cookie, then forgotten),
// the pages the key's kind may use, and signing out. Every text from the server is rendered as text.

export function App() {
  const client = useQueryClient()
  const session = useQuery({
    queryKey: ['session'],
    queryFn: () => api<Session>('console/session'),
    retry: false,
  })
  const [ended, setEnded] = useState(false)
  // A call refused for want of a session (it expired, or was ended elsewhere): back to signing in.
  useEffect(() => {
    const over = () => {
      if (!client.getQueryData(['session'])) return
      setEnded(true)
      client.clear()
      void client.invalidateQueries({ queryKey: ['session'] })
    }
    window.addEventListener(SESSION_ENDED, over)
    return () => window.removeEventListener(SESSION_ENDED, over)
  }, [client])
  if (session.isPending)
    return (
      <main aria-busy="true">
        <p>Checking whether you are signed in…</p>
      </main>
    )
  if (session.isError) return <SignIn ended={ended} />
  return <Signed session={session.data} />
}

/** Why a single sign-on came back refused (the server's words, in a cookie of its own), shown once. */
function ssoRefusal(): string | undefined {
  const found = document.cookie.split('; ').find((c) => c.startsWith('roster_sso_error='))
  if (!found) return undefined
  document.cookie = 'roster_sso_error=; Max-Age=0; Path=/'
  try {
    return decodeURIComponent(found.slice('roster_sso_error='.length))
  } catch {
    return 'the sign-in was refused: try again'
  }
}

function SignIn({ ended }: { ended: boolean }) {
  const client = useQueryClient()
  const [key, setKey] = useState('')
  const [refused] = useState(ssoRefusal)
  const sso = useQuery({
    queryKey: ['sso'],
    queryFn: () => api<{ enabled: boolean; name: string | null }>('console/sso'),
    retry: false,
  })
  const signIn = useMutation({
    mutationFn: (k: string) => api<Session>('console/session', { method: 'POST', body: JSON.stringify({ key: k }) }),
    onSuccess: (s) => {
      setKey('')
      client.setQueryData(['session'], s)
    },
  })
  const submit = (e: FormEvent) => {
    e.preventDefault()
    signIn.mutate(key)
  }
  return (
    <main className="sign-in">
      <h1>Roster</h1>
      {ended && <p role="status">Your session has ended: sign in again.</p>}
      {refused && <p role="alert">{refused}</p>}
      {sso.data?.enabled && (
        <p>
          <a className="button" href={new URL('console/sso/start', apiBase).toString()}>
            Sign in with {sso.data.name}
          </a>
        </p>
      )}
      <form onSubmit={submit}>
        <label htmlFor="key">{sso.data?.enabled ? 'Or an API key' : 'API key'} (or the operator's token)</label>
        <input
          id="key"
          type="password"
          autoComplete="off"
          value={key}
          onChange={(e) => setKey(e.target.value)}
          required
        />
        <button type="submit" disabled={signIn.isPending}>
          Sign in
        </button>
        {signIn.isError && (
          <p role="alert">
            {signIn.error instanceof ApiError && signIn.error.status === 401
              ? 'That key is not valid.'
              : signIn.error.message}
          </p>
        )}
      </form>
    </main>
  )
}

type PageLink = { path: string; title: string }
/** Every page once, by its path; each kind of session offers some of them, in this order. */
const P = {
  interns: { path: 'interns', title: 'Interns' },
  questions: { path: 'questions', title: 'Questions' },
  keys: { path: 'keys', title: 'API keys' },
  spend: { path: 'spend', title: 'Spend' },
  generations: { path: 'generations', title: 'Generations' },
  governance: { path: 'governance', title: 'Governance' },
  audit: { path: 'audit', title: 'Audit log' },
  models: { path: 'models', title: 'Models' },
  playground: { path: 'playground', title: 'Playground' },
  presets: { path: 'presets', title: 'Presets' },
  dryRun: { path: 'dry-run', title: 'Guardrail dry run' },
  fleet: { path: 'fleet', title: 'Fleet' },
} satisfies Record<string, PageLink>

const MEMBER_PAGES = [P.interns, P.questions, P.generations, P.models, P.playground, P.presets, P.dryRun]

/** A person signed in as themselves: everything their role allows, in one session. */
const PERSON_PAGES: Record<'admin' | 'member', PageLink[]> = {
  admin: [
    P.interns,
    P.questions,
    P.keys,
    P.spend,
    P.generations,
    P.governance,
    P.audit,
    P.models,
    P.playground,
    P.presets,
    P.dryRun,
  ],
  member: [
    P.interns,
    P.questions,
    { ...P.keys, title: 'My keys' },
    { ...P.spend, title: 'My spend' },
    P.generations,
    P.models,
    P.playground,
    P.presets,
    P.dryRun,
  ],
}

/** The pages a key's kind may use, the first its home (a management key governs; the others use interns). */
const PAGES: Record<Session['kind'], PageLink[]> = {
  user: MEMBER_PAGES,
  organization: MEMBER_PAGES,
  intern: [P.interns, P.questions],
  management: [P.keys, P.spend, P.generations, P.governance, P.audit, P.models, P.presets, P.dryRun],
  operator: [P.fleet],
}

function Signed({ session }: { session: Session }) {
  const client = useQueryClient()
  const route = useRoute()
  const signOut = useMutation({
    mutationFn: () => api<void>('console/session', { method: 'DELETE' }),
    onSettled: () => client.clear(),
  })
  const pages = session.member ? PERSON_PAGES[session.member.role] : PAGES[session.kind]
  const here = route.parts[0] ?? pages[0]!.path
  const title = pages.find((p) => p.path === here)?.title
  // Each page has its own title (tabs and history tell them apart).
  useEffect(() => {
    document.title = title ? `${title} · Roster` : 'Roster'
  }, [title])
  return (
    <>
      <header>
        <strong>Roster</strong>
        <nav aria-label="Pages">
          {pages.map((p) => (
            <a key={p.path} href={href([p.path])} aria-current={here === p.path ? 'page' : undefined}>
              {p.title}
            </a>
          ))}
        </nav>
        <span>
          {session.member
            ? `${session.member.email} · ${session.member.role} · ${session.workspace_name ?? `workspace ${session.workspace_id}`}`
            : session.workspace_id
              ? `${session.kind} key · ${session.workspace_name ?? `workspace ${session.workspace_id}`}`
              : 'operator'}
        </span>
        <button type="button" onClick={() => signOut.mutate(undefined, { onSuccess: () => location.reload() })}>
          Sign out
        </button>
      </header>
      <main>
        <Suspense fallback={<p aria-busy="true">Loading…</p>}>
          <Page route={route} home={here} allowed={pages.some((p) => p.path === here)} />
        </Suspense>
      </main>
    </>
  )
}

function Page({ route, home, allowed }: { route: Route; home: string; allowed: boolean }) {
  if (!allowed) return <p role="alert">This page is not for you (your key's kind or your role).</p>
  const [, id, sub] = route.parts
  switch (home) {
    case 'interns':
      if (id && sub === 'chat') return <Chat key={id} id={id} route={route} />
      if (id) return <Intern key={id} id={id} />
      return <Interns route={route} />
    case 'keys':
      return <Keys route={route} />
    case 'questions':
      return <Inbox />
    case 'spend':
      return <Spend route={route} />
    case 'generations':
      return <Generations route={route} />
    case 'governance':
      return id === 'workspaces' && sub ? <WorkspacePage key={sub} id={sub} /> : <Governance />
    case 'models':
      return <Models />
    case 'audit':
      return <AuditLog route={route} />
    case 'playground':
      return <Playground />
    case 'presets':
      return <Presets />
    case 'dry-run':
      return <DryRun route={route} />
    case 'fleet':
      return <Fleet />
    default:
      return <p role="alert">No such page.</p>
  }
}
