export {
  eventCallback,
  startSlackSim,
  type SlackSim,
  type SlackSimApp,
  type SlackSimCall,
  type SlackSimFault,
  type SlackSimMessage,
} from './server.js'
