export * from './request.js'
