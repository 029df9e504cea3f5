import { startSlackSim } from './server.js'

// `npm run slack-sim`: the Slack stand-in on its own, for trying an intern in "Slack" by hand: it
// prints the settings that point Roster at it and an app to link an intern to (docs/slack.md).
const port = Number(process.env.SLACK_SIM_PORT ?? 3400)
// Where Roster listens, as npm start does (PORT, default 3000), or ROSTER_URL outright.
const roster = (process.env.ROSTER_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`).replace(/\/+$/, '')
const sim = await startSlackSim({ port })
const app = sim.addApp()
process.stdout.write(
  [
    `Slack stand-in listening on ${sim.url}`,
    '',
    'Start Roster pointed at it:',
    `  SLACK_API_URL=${sim.apiUrl} SLACK_AUTHORIZE_URL=${sim.authorizeUrl} npm start`,
    '',
    'An app to link an intern to (POST /api/v1/interns with "slack": {"app": …}):',
    `  ${JSON.stringify({ client_id: app.clientId, client_secret: app.clientSecret, signing_secret: app.signingSecret })}`,
    '',
    'Then: open the intern\'s install_url; say something in "Slack":',
    `  curl -s ${sim.url}/sim/say -d '{"events_url":"${roster}/api/v1/slack/events/<intern id>","text":"hello"}'`,
    `read what the intern posted: curl -s ${sim.url}/sim/messages`,
    'and click a button of a card it posted (its ts from /sim/messages; button 0 is "Allow once"):',
    `  curl -s ${sim.url}/sim/click -d '{"interactivity_url":"${roster}/api/v1/slack/interactivity/<intern id>","ts":"<card ts>","button":0}'`,
    '',
  ].join('\n'),
)
const stop = () => void sim.close().then(() => process.exit(0))
process.once('SIGINT', stop)
process.once('SIGTERM', stop)
