export {
  eventCallback,
  startSlackSim,
  type SlackSim,
  type SlackSimApp,
  type SlackSimCall,
  type SlackSimFault,
  type SlackSimMessage,
  type SlackSimPerson,
} from './server.js'
