import { lacking, startRedisCluster } from '@roster/testing'
import { lifecycleSuite } from './lifecycle.suite.js'

// The same lifecycle with every process on a real Redis Cluster (six local redis-servers, three
// masters and their replicas), selected by REDIS_CLUSTER_NODES.
lifecycleSuite({
  cluster: startRedisCluster,
  skip: await lacking(['redis-server'], 'the lifecycle on a Redis Cluster'),
})
