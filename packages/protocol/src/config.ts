// One settings table per process, parsed once at start-up (config/load.ts): this module and those
// beside it under config/ are the only ones that read process.env. Each process's table is its own
// file; what several share is config/values.ts.

export { ApiConfig } from './config/api.js'
export { WorkerConfig } from './config/worker.js'
export { RuntimeConfig } from './config/runtime.js'
export { CliConfig } from './config/cli.js'
export { StartConfig } from './config/start.js'
export { ConfigError, loadConfig, loadConfigOrExit } from './config/load.js'
