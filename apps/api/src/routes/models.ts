import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { ZodTypeProvider } from 'fastify-type-provider-zod'
import { z } from 'zod'
import {
  AnthropicModelsQuery,
  anthropicModelsPage,
  countModels,
  findModel,
  modelEndpoints,
  modelObject,
  modelsList,
  describeIssues,
  ModelsQuery,
  modelsQueryProblem,
  providersOf,
  queryModels,
  zdrEndpoints,
} from '@roster/gateway'
import { AppError, readEndpointHealth, type EndpointHealth } from '@roster/shared'
import { requireKey } from '../plugins/auth.js'
import type { AppDeps } from '../deps.js'

const ModelParams = z.object({ author: z.string(), slug: z.string() })
const CountQuery = z.object({ output_modalities: ModelsQuery.shape.output_modalities })

/**
 * The catalogue in the shapes the official client reads (`client.models`, `client.endpoints`,
 * `client.providers`): any valid key. The whole list, asked for with no query, is serialised once.
 */
export const modelRoutes =
  (deps: AppDeps): FastifyPluginAsync =>
  async (app) => {
    const api = app.withTypeProvider<ZodTypeProvider>()
    // The key as a bearer token, or as `x-api-key` (Anthropic's clients list models too).
    const anyKey = requireKey(deps.authenticate, { xApiKey: true })
    // Errors in the gateway's envelope (`metadata.error_type`), or the Anthropic client's to it.
    const config = { errorWire: 'gateway' as const, anthropicClients: true }
    // Endpoint health read from Redis at most every 10 s per model; without Redis, unknown (null).
    const healthRead = new Map<string, { at: number; value: Promise<Map<string, EndpointHealth> | undefined> }>()
    const healthOf = (model: string, providers: string[]) => {
      const kept = healthRead.get(model)
      if (kept && Date.now() - kept.at < 10_000) return kept.value
      const value = readEndpointHealth(deps.redis, deps.config.QUEUE_PREFIX, model, providers).catch(() => undefined)
      if (healthRead.size > 1_000) healthRead.clear()
      healthRead.set(model, { at: Date.now(), value })
      return value
    }
    const whole = JSON.stringify(modelsList(deps.catalogue))
    const wholeList = (reply: FastifyReply) => reply.type('application/json; charset=utf-8').send(whole)
    const page = (req: FastifyRequest, q: ModelsQuery, path: string) => {
      const problem = modelsQueryProblem(q)
      if (problem) throw new AppError('invalid_body', problem)
      return req.url.includes('?') ? queryModels(deps.catalogue, q, path) : undefined
    }

    api.get(
      '/models',
      {
        onRequest: anyKey,
        config,
        schema: { operationId: 'listModels', summary: 'The models this Roster serves', querystring: ModelsQuery },
      },
      async (req, reply) => {
        // The Anthropic client (it always sends anthropic-version) reads its own page shape.
        if (req.headers['anthropic-version'] !== undefined) {
          // Its own parameters (after_id, before_id), which the official client's query schema leaves out.
          const given = Object.fromEntries(new URL(req.url, 'http://roster').searchParams)
          const q = AnthropicModelsQuery.safeParse(given)
          if (!q.success) throw new AppError('invalid_body', `the query is invalid: ${describeIssues(q.error)}`)
          return anthropicModelsPage(deps.catalogue, q.data)
        }
        return page(req, req.query, '/api/v1/models') ?? wholeList(reply)
      },
    )
    // The client sends this one's key as its own bearer argument, or none at all: then 401.
    api.get(
      '/models/user',
      {
        onRequest: anyKey,
        config,
        schema: {
          operationId: 'listModelsUser',
          summary: 'The models this key may use (the whole catalogue until guardrails narrow it)',
          querystring: ModelsQuery,
        },
      },
      async (req, reply) => page(req, req.query, '/api/v1/models/user') ?? wholeList(reply),
    )
    api.get(
      '/models/count',
      {
        onRequest: anyKey,
        config,
        schema: { operationId: 'listModelsCount', summary: 'How many models are served', querystring: CountQuery },
      },
      async (req) => countModels(deps.catalogue, req.query.output_modalities),
    )
    api.get(
      '/model/:author/:slug',
      {
        onRequest: anyKey,
        config,
        schema: { operationId: 'getModel', summary: 'One model', params: ModelParams },
      },
      async (req) => {
        const id = `${req.params.author}/${req.params.slug}`
        const model = findModel(deps.catalogue, id)
        if (!model)
          throw new AppError('not_found', `no model named ${id} is served here; GET /api/v1/models lists them`)
        return { data: modelObject(model) }
      },
    )
    api.get(
      '/models/:author/:slug/endpoints',
      {
        onRequest: anyKey,
        config,
        schema: {
          operationId: 'listEndpoints',
          summary: 'The provider endpoints that serve one model',
          params: ModelParams,
        },
      },
      async (req) => {
        const id = `${req.params.author}/${req.params.slug}`
        const data = modelEndpoints(deps.catalogue, id)
        if (!data) throw new AppError('not_found', `no model named ${id} is served here; GET /api/v1/models lists them`)
        // Each endpoint's uptime and time to first token, as the workers counted them (null: no calls).
        const health = await healthOf(id, [...new Set(data.endpoints.map((e) => e.provider_name))])
        return {
          data: { ...data, endpoints: data.endpoints.map((e) => ({ ...e, ...health?.get(e.provider_name) })) },
        }
      },
    )
    api.get(
      '/endpoints/zdr',
      {
        onRequest: anyKey,
        config,
        schema: { operationId: 'listEndpointsZdr', summary: 'Endpoints whose providers keep no data' },
      },
      async () => zdrEndpoints(deps.catalogue),
    )
    api.get(
      '/providers',
      {
        onRequest: anyKey,
        config,
        schema: { operationId: 'listProviders', summary: 'The providers the catalogue routes to' },
      },
      async () => providersOf(deps.catalogue),
    )
  }
