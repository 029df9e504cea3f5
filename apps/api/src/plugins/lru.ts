/**
 * A map that holds at most `capacity` entries and, when full, lets go of the one used least
 * recently (a Map keeps insertion order: a use moves the entry to the end, the first is the oldest).
 */
export class Lru<K, V> {
  private readonly map = new Map<K, V>()

  constructor(private readonly capacity: number) {}

  get(key: K): V | undefined {
    const value = this.map.get(key)
    if (value !== undefined) {
      this.map.delete(key)
      this.map.set(key, value)
    }
    return value
  }

  has(key: K): boolean {
    return this.map.has(key)
  }

  set(key: K, value: V): void {
    this.map.delete(key)
    this.map.set(key, value)
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as K)
  }

  delete(key: K): void {
    this.map.delete(key)
  }

  /** Lets go of every entry `drop` says to (a walk over all of them: for rare, broad changes). */
  deleteWhere(drop: (value: V) => boolean): void {
    for (const [key, value] of this.map) if (drop(value)) this.map.delete(key)
  }

  get size(): number {
    return this.map.size
  }
}
