import { useEffect, useState } from 'react'

// Pages live in the URL's fragment (#/interns/…?q=…): the console is static files under whatever
// prefix a proxy gives it, so only the fragment is ours to route on; filters stay in it, so a page
// reloads, is bookmarked and shared as it was.

export interface Route {
  /** The path's parts: `#/interns/abc` is ['interns', 'abc']. */
  parts: string[]
  query: URLSearchParams
}

function current(): Route {
  const hash = window.location.hash.replace(/^#\/?/, '')
  const [path = '', search = ''] = hash.split('?', 2)
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(search) }
}

export function useRoute(): Route {
  const [route, setRoute] = useState(current)
  useEffect(() => {
    const changed = () => setRoute(current())
    window.addEventListener('hashchange', changed)
    return () => window.removeEventListener('hashchange', changed)
  }, [])
  return route
}

/** The fragment for a page: its path's parts and its filters (empty ones left out). */
export function href(parts: string[], query: Record<string, string | undefined> = {}): string {
  const search = new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => !!e[1])).toString()
  return `#/${parts.map(encodeURIComponent).join('/')}${search ? `?${search}` : ''}`
}

/** Changes the page's filters in place (no new history entry per keystroke). */
export function replaceQuery(route: Route, query: Record<string, string | undefined>) {
  const next = href(route.parts, { ...Object.fromEntries(route.query), ...query })
  window.history.replaceState(null, '', next)
  window.dispatchEvent(new HashChangeEvent('hashchange'))
}

/**
 * A filter typed into a box and kept in the URL as `name`: the URL follows the box after a pause
 * in typing (`also` changes other filters with it, such as going back to the first page).
 */
export function useTypedFilter(route: Route, name: string, also: Record<string, undefined> = {}) {
  const value = route.query.get(name) ?? ''
  const [typed, setTyped] = useState(value)
  useEffect(() => {
    const t = setTimeout(
      () => typed !== value && replaceQuery(route, { [name]: typed.trim() || undefined, ...also }),
      300,
    )
    return () => clearTimeout(t)
    // (`also` is a literal of the caller's, new each render: not a reason to wait again.)
  }, [typed, value, route, name])
  return { value, typed, setTyped }
}
