import { chaosSuite } from './chaos.suite.js'

// The chaos over a real Redis Cluster (six local redis-servers): Redis's deaths are masters killed
// mid-run, their replicas promoted.
await chaosSuite('cluster')
