import { describe, expect, it } from 'vitest'
import { ApiConfig, ConfigError, loadConfig, WorkerConfig } from './config.js'

describe('loadConfig', () => {
  it('applies defaults for a bare environment', () => {
    const sut = loadConfig(ApiConfig, {})
    expect(sut.PORT).toBe(3000)
    expect(sut.DATABASE_URL).toBe('postgresql://postgres@127.0.0.1:5432/roster')
    expect(sut.REGIONAL_HOSTS).toEqual([])
    expect(sut.VAULT_MASTER_KEY).toBeUndefined()
  })

  it('reads host=region pairs into a map where only the hosts given name a region', () => {
    const sut = loadConfig(ApiConfig, { DATA_REGION_HOSTS: 'EU.example.com=eu, us.example.com = US' })
    expect({ ...sut.DATA_REGION_HOSTS }).toEqual({ 'eu.example.com': 'europe', 'us.example.com': 'us' })
    for (const name of ['constructor', '__proto__', 'toString']) expect(sut.DATA_REGION_HOSTS[name]).toBeUndefined()
    expect(() => loadConfig(ApiConfig, { DATA_REGION_HOSTS: 'a.example=mars' })).toThrow(ConfigError)
    expect(() => loadConfig(ApiConfig, { DATA_REGION_HOSTS: 'a.example' })).toThrow(ConfigError)
  })

  it('coerces numbers and lists, and treats empty strings as unset', () => {
    const sut = loadConfig(ApiConfig, {
      PORT: '8080',
      REGIONAL_HOSTS: 'EU.example.com, us.example.com,',
      INTERN_LIMIT_PER_MEMBER: '',
    })
    expect(sut.PORT).toBe(8080)
    expect(sut.REGIONAL_HOSTS).toEqual(['eu.example.com', 'us.example.com'])
    expect(sut.INTERN_LIMIT_PER_MEMBER).toBe(100)
  })

  it('accepts a master key as hex or base64 and yields its 32 bytes', () => {
    const hex = 'ab'.repeat(32)
    expect(loadConfig(ApiConfig, { VAULT_MASTER_KEY: hex }).VAULT_MASTER_KEY).toEqual(Buffer.from(hex, 'hex'))
    const b64 = Buffer.alloc(32, 7).toString('base64')
    expect(loadConfig(ApiConfig, { VAULT_MASTER_KEY: b64 }).VAULT_MASTER_KEY).toEqual(Buffer.alloc(32, 7))
  })

  it('names every bad variable, and never echoes a key', () => {
    let error: unknown
    try {
      loadConfig(WorkerConfig, {
        PORT: 'x',
        DATABASE_URL: 'mysql://x',
        VAULT_MASTER_KEY: 'short-secret',
        QUEUE_PREFIX: 'roster',
        INTERNS_DOMAIN: 'Bad_Domain',
      })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ConfigError)
    const message = (error as ConfigError).message
    for (const name of ['DATABASE_URL', 'VAULT_MASTER_KEY', 'QUEUE_PREFIX', 'INTERNS_DOMAIN'])
      expect(message).toContain(name)
    expect(message).not.toContain('short-secret')
  })

  it('takes TRUST_PROXY as a switch or a list of addresses, ranges and named ranges, and refuses anything else by name', () => {
    expect(loadConfig(ApiConfig, {}).TRUST_PROXY).toBe(false)
    expect(loadConfig(ApiConfig, { TRUST_PROXY: 'true' }).TRUST_PROXY).toBe(true)
    expect(loadConfig(ApiConfig, { TRUST_PROXY: 'loopback, 10.0.0.0/8,::1' }).TRUST_PROXY).toBe(
      'loopback, 10.0.0.0/8,::1',
    )
    expect(() => loadConfig(ApiConfig, { TRUST_PROXY: 'loopback,garbage' })).toThrow(/TRUST_PROXY: .*bad: garbage/)
  })
})
