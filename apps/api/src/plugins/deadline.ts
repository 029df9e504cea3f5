import { AppError } from '@roster/shared'

/** Runs work against the route's deadline; past it the caller gets 408 quoting the deadline. */
export async function withDeadline<T>(ms: number, route: string, work: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new AppError(
            'timeout',
            `${route} did not finish within its ${ms} ms deadline; retry with the same Idempotency-Key`,
          ),
        ),
      ms,
    )
  })
  try {
    return await Promise.race([work(), expired])
  } finally {
    clearTimeout(timer)
  }
}
