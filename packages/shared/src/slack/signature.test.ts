import { describe, expect, it } from 'vitest'
import { checkSlackSignature, slackSignatureHeaders } from './signature.js'

describe("Slack's request signature (v0)", () => {
  const secret = '8f742231b10e8888abcd99yyyzzz85a5'
  const body = 'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&command=%2Fweather'

  it("accepts Slack's own documented example, and refuses it changed in any part", () => {
    // docs.slack.dev "Verifying requests from Slack": its worked example, at its timestamp.
    const ts = '1531420618'
    const signature = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503'
    const slackBody =
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c'
    const at = Number(ts) * 1000
    expect(checkSlackSignature(secret, ts, signature, slackBody, at)).toBe('ok')
    expect(checkSlackSignature(secret, ts, signature, `${slackBody}x`, at)).toBe('mismatch')
    expect(checkSlackSignature(`${secret}x`, ts, signature, slackBody, at)).toBe('mismatch')
    expect(checkSlackSignature(secret, ts, signature.replace(/.$/, '4'), slackBody, at)).toBe('mismatch')
  })

  it('refuses a timestamp more than five minutes off, and missing or odd headers', () => {
    const now = Date.now()
    const h = slackSignatureHeaders(secret, body, now)
    expect(checkSlackSignature(secret, h['x-slack-request-timestamp'], h['x-slack-signature'], body, now)).toBe('ok')
    expect(
      checkSlackSignature(secret, h['x-slack-request-timestamp'], h['x-slack-signature'], body, now + 301_000),
    ).toBe('stale')
    expect(checkSlackSignature(secret, undefined, h['x-slack-signature'], body, now)).toBe('missing')
    expect(checkSlackSignature(secret, h['x-slack-request-timestamp'], undefined, body, now)).toBe('missing')
    expect(checkSlackSignature(secret, '12e3', h['x-slack-signature'], body, now)).toBe('missing')
    expect(checkSlackSignature(secret, h['x-slack-request-timestamp'], 'v0=short', body, now)).toBe('mismatch')
  })
})
