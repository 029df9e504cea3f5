import { lifecycleSuite } from './lifecycle.suite.js'

// The lifecycle over one Redis server (lifecycle.cluster.test.ts: over a Redis Cluster).
lifecycleSuite()
