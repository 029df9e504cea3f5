import { chaosSuite } from './chaos.suite.js'

// The chaos over one Redis server (chaos.cluster.test.ts: over a Redis Cluster, masters failing over).
await chaosSuite('server')
