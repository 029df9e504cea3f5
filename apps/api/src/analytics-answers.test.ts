import { describe, expect, it, vi } from 'vitest'
import { AnalyticsAnswers } from './analytics-answers.js'

describe('AnalyticsAnswers', () => {
  it('runs one query for everyone asking at once, then serves its answer until it is ttl old', async () => {
    vi.useFakeTimers()
    try {
      const answers = new AnalyticsAnswers({ ttlMs: 5_000, concurrency: 2 })
      let runs = 0
      const query = async () => ++runs
      expect(await Promise.all(Array.from({ length: 50 }, () => answers.get('a', { m: 1 }, query)))).toEqual(
        Array(50).fill(1),
      )
      expect(runs).toBe(1)
      // Another account, or another body, is another question.
      expect(await answers.get('b', { m: 1 }, query)).toBe(2)
      expect(await answers.get('a', { m: 2 }, query)).toBe(3)
      vi.advanceTimersByTime(4_999)
      expect(await answers.get('a', { m: 1 }, query)).toBe(1)
      // Past the ttl: the kept answer is served while a fresh one is fetched, which the next asker gets.
      vi.advanceTimersByTime(2)
      expect(await answers.get('a', { m: 1 }, query)).toBe(1)
      await vi.runAllTimersAsync()
      expect(await answers.get('a', { m: 1 }, query)).toBe(4)
      // Older than a minute: the asker waits for a fresh answer.
      vi.advanceTimersByTime(61_000)
      expect(await answers.get('a', { m: 1 }, query)).toBe(5)
    } finally {
      vi.useRealTimers()
    }
  })

  it('keeps no failure, and runs at most `concurrency` queries at once', async () => {
    const answers = new AnalyticsAnswers({ ttlMs: 5_000, concurrency: 2 })
    await expect(answers.get('a', {}, () => Promise.reject(new Error('boom')))).rejects.toThrow('boom')
    expect(await answers.get('a', {}, async () => 'ok')).toBe('ok')
    let running = 0
    let most = 0
    const releases: (() => void)[] = []
    const slow = () =>
      new Promise<number>((resolve) => {
        most = Math.max(most, ++running)
        releases.push(() => (running--, resolve(1)))
      })
    const all = Promise.all([1, 2, 3, 4].map((i) => answers.get('a', { i }, slow)))
    await vi.waitFor(() => expect(releases.length).toBe(2))
    while (releases.length) {
      releases.shift()!()
      await new Promise((r) => setImmediate(r))
    }
    await all
    expect(most).toBe(2)
  })
})
