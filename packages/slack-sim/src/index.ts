export { startSlackSim, type SlackSim, type SlackSimApp, type SlackSimCall } from './server.js'
