// The runtime's public surface (generic controller machinery, nothing storage-specific): re-exports only.
export * from './clock.ts';
export * from './pino-logger.ts';
export { silentLogger, type Logger } from '../types/logger.ts';
// API-facing half: client, errors, kubeconfig, resources, watch, cache, informer, leader election, events.
export * from './status-errors.ts';
export * from './kubeconfig.ts';
export { KubeConfigError, RestConfig, type RestCluster, type RestContext, type RestUser } from './rest-config.ts';
export * from './resources.ts';
export { apiVersionOf } from '../types/api-version.ts';
export * from './client.ts';
export * from './watch-stream.ts';
export * from './object-store.ts';
export * from './reflector.ts';
export * from './informer.ts';
export * from './cache-transform.ts';
export * from '../types/shared-strings.ts';
export * from './leader-election.ts';
export * from './event-recorder.ts';
// Scheduling half: work queue, rate limiters, token bucket, metrics, health server, event correlator.
export * from './token-bucket.ts';
export * from './rate-limiters.ts';
export * from './workqueue.ts';
export * from './metrics.ts';
export * from './health-server.ts';
export * from './event-correlator.ts';
export * from './heap-policy.ts';
